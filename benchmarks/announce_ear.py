"""The ear (Whisper base, CPU) on announcements, through the real server and the real Wyoming client.

Two comparisons (issue 15), each printed as a Markdown table with the toneless-pinyin error rate pooled over
all sentences (edits / reference syllables):

- the announcement held-out set as written (our front end reads it) against the same sentences sent as their
  expected spoken forms (a perfect front end), on one server;
- typical replies, some whose first sentence is long and has no comma, on our server as configured by default
  (on the CPU: stage 2 in frame windows, ``engine.windows``; no first-chunk cut) and on the same server
  rendering every sentence whole (``engine.windows.first_frames: 0``, ``text.first_clause_chars: 0``): what
  starts the audio early must not make the speech harder to understand. ``--cut`` adds the first-chunk cut
  (``text.first_clause_chars: 12``) to the default server, as it was shipped before the windows.

    python benchmarks/announce_ear.py [--set tests/unit/text/data/announce_holdout.tsv] [--out out/announce-ear]
        [--part replies --voices zf_xiaobei ... --windows pad_frames=0,closing_weight=1]

About 10 minutes on 2 CPU cores (the model synthesises, Whisper base transcribes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from ear import _syllables, pinyin_error_rate, transcribe  # noqa: E402

from wyoming_fasttts.bench.servers import free_port, start  # noqa: E402
from wyoming_fasttts.client import say  # noqa: E402
from wyoming_fasttts.text.evaluation import load_cases  # noqa: E402

REPLIES = [
    "好的，已经为您打开客厅的灯。现在室内温度是二十三度。",
    "明天北京晴转多云，最高气温十八度。早晚温差较大，出门记得添衣。祝您出行愉快！",
    "洗衣机已经完成了本次的洗涤程序。请及时晾晒衣物，以免产生异味。",
    "检测到厨房的燃气浓度超过了安全标准。请立即开窗通风并关闭燃气阀门。",
    "您的快递已经放在小区东门的快递柜里了。取件码是三五八二，请尽快取件。",
    "扫地机器人已经完成了客厅和卧室的清扫。本次清扫用时四十二分钟，清扫面积六十五平方米。",
    # Added 2026-12-01 (second session) before the ear ran on them, for a tighter bound than six replies give.
    "主卧的空调已经调到二十六度并切换为睡眠模式。祝您晚安。",
    "今天下午三点有一个关于年度预算的部门会议。会议地点在三楼的大会议室，请提前十分钟到场。",
    "前门的智能门锁刚才被您的家人用指纹打开了。目前门已经重新上锁。",
    "根据您设置的自动化规则，所有窗帘将在日落时自动关闭。今天的日落时间是下午五点十二分。",
    "好的，音乐已经暂停。需要的时候随时叫我。",
    "热水器里的水已经加热到您设定的五十五度了。现在可以洗澡了。",
]
# ``--more``: a second dozen, written 2026-12-03 before the ear ran on them: with 24 replies in eight voices a paired
# difference's standard error is ~0.16 points instead of ~0.23, so a 0.3-point bound can be told from noise.
MORE_REPLIES = [
    "阳台的洗衣机还有十五分钟就洗完了。到时候我再提醒您。",
    "车库门已经关好了。今晚的安防模式也已经开启。",
    "您订的外卖骑手已经到达小区门口了。请准备下楼取餐。",
    "书房的空气净化器检测到室内空气质量已经恢复良好。现在已经自动切换到静音模式。",
    "好的，明天早上七点会准时叫您起床。晚安。",
    "儿童房的夜灯已经调到最暗的暖光。宝宝的房间温度是二十四度，湿度百分之五十。",
    "冰箱的门已经开了超过两分钟。请记得把门关好，以免食物变质。",
    "今天的用电量比昨天多了百分之十二。主要是客厅的空调开得比较久。",
    "门口的摄像头刚才拍到一位快递员放下了一个包裹。包裹现在就在门口的鞋柜旁边。",
    "花园的自动浇水已经开始了。大约二十分钟后结束。",
    "您好，现在是晚上十点整。所有的窗户都已经关闭，门锁也都已经锁好了。",
    "卫生间的排气扇已经运行了半个小时。湿度已经降到百分之六十以下，我帮您关掉了。",
]

# ``--third``: a third and fourth dozen, written 2026-12-05 before the ear ran on them (most with a long first sentence
# and no comma, the case part 3 is about): 48 replies in eight voices, 384 texts, for a tighter bound again.
THIRD_REPLIES = [
    "客厅的扫地机器人因为被电线缠住已经停止工作了。请您过去帮它解开。",
    "地下室的漏水传感器刚刚检测到地面有积水。我已经关闭了总水阀。",
    "您预约的网约车司机还有三分钟到达楼下。车牌尾号是五六七。",
    "今天晚上的最低气温会降到零下三度。记得给阳台的花盆盖上保温布。",
    "好的，已经把卧室的窗帘打开一半了。",
    "洗碗机的漂洗剂快要用完了。下次购物的时候记得买一瓶。",
    "明天早上八点半您有一个牙医的预约。我会提前一个小时提醒您出门。",
    "楼下的信箱里刚刚收到了一封挂号信。邮递员说需要本人签收。",
    "家里的无线网络刚才断开了大约五分钟。现在已经自动恢复正常了。",
    "电动汽车已经充到百分之八十的电量了。预计还能行驶三百二十公里。",
    "宠物喂食器刚刚给猫咪投放了今天的第二顿饭。剩余的猫粮还够吃六天。",
    "您设置的番茄钟已经结束了。休息五分钟再继续工作吧。",
    "书房的台灯已经亮了三个小时而房间里没有检测到有人。需要我帮您关掉吗？",
    "今天空气质量良好，适合开窗通风。",
    "厨房的烟雾报警器电池电量不足。请尽快更换新的电池。",
    "车库里的温度已经降到了五度以下。水管有结冰的风险，建议打开加热带。",
    "好的，已经为您把明天的闹钟改到六点四十五分。",
    "儿童房的门窗传感器显示窗户还开着。外面正在下雨，请记得关窗。",
    "太阳能板今天一共发电十八度。其中有十二度已经存进了家里的电池。",
    "您的包裹已经被邻居代收了。他说晚上七点以后在家。",
    "浴室的地暖已经预热到二十八度了。现在洗澡正合适。",
    "根据日历今天是奶奶的生日。要不要我帮您给她打个视频电话？",
    "客厅的电视已经连续播放了四个小时。要不要休息一下眼睛？",
    "所有的灯都已经关闭，安防系统已经开启。晚安，祝您好梦。",
]


def _server(name: str, config: str | None, logs: Path):
    port = free_port()
    cmd = [sys.executable, "-m", "wyoming_fasttts", "serve", "--uri", f"tcp://127.0.0.1:{port}", "--http-uri", "",
           "--engine", "onnxruntime", *(["--config", config] if config else [])]
    return start(name, cmd, port, logs)


def _score(uri: str, sent: list[str], references: list[str], voices: tuple[str | None, ...] = (None,)
           ) -> tuple[float, list[dict]]:
    """Pooled error rate of what ``uri`` said for ``sent`` in each of ``voices``, judged against ``references``."""
    edits = total = 0.0
    rows = []
    for voice in voices:
        for text, ref in zip(sent, references, strict=True):
            heard = transcribe(bytes(asyncio.run(say(uri, text, voice=voice)).pcm))
            n = len(_syllables(ref))
            rate = pinyin_error_rate(ref, heard)
            edits, total = edits + rate * n, total + n
            rows.append({"voice": voice, "sent": text, "reference": ref, "heard": heard, "error": round(rate, 4)})
    return edits / max(1, total), rows


def _earlier(path: str, like: list[dict]) -> tuple[float, list[dict]]:
    """The whole-sentence rows of an earlier run for the same (voice, text) pairs, in ``like``'s order, and their
    pooled rate."""
    earlier = {(r["voice"], r["sent"]): r for r in json.loads(Path(path).read_text(encoding="utf-8"))["rows"]["no_cut"]}
    rows = [earlier[(r["voice"], r["sent"])] for r in like]
    n = [len(_syllables(r["reference"])) for r in rows]
    return sum(r["error"] * k for r, k in zip(rows, n, strict=True)) / max(1, sum(n)), rows


def paired_difference(ours: list[dict], theirs: list[dict], resamples: int = 20000) -> dict[str, float]:
    """``ours`` minus ``theirs`` in pooled error points, with a paired bootstrap over the texts.

    Whisper's verdict on a sentence flips with small changes in the audio, both ways (a window's audio heard
    better as often as worse), so a difference of a few tenths of a point over ~50 texts is within what
    resampling those texts moves it by; the interval says whether a bound such as issue 15's 0.3 points can
    be told apart at all with this many texts.
    """
    assert [(r["voice"], r["sent"]) for r in ours] == [(r["voice"], r["sent"]) for r in theirs]
    n = np.array([len(_syllables(r["reference"])) for r in ours], float)
    delta = np.array([(a["error"] - b["error"]) for a, b in zip(ours, theirs, strict=True)]) * n
    picks = np.random.default_rng(0).integers(0, len(n), (resamples, len(n)))
    boot = 100 * delta[picks].sum(1) / n[picks].sum(1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"points": round(100 * float(delta.sum() / n.sum()), 3), "ci95": [round(float(lo), 3), round(float(hi), 3)],
            "se": round(float(boot.std()), 3), "texts": len(n), "texts_differing": int((delta != 0).sum())}


def windows_yaml(spec: str) -> str:
    """``engine.windows`` overrides as config YAML from ``key=value,...`` ("" for none; ``window_ttfa.py`` too)."""
    items = [item.split("=") for item in spec.split(",") if item]
    return "engine:\n  windows:\n" + "".join(f"    {k}: {v}\n" for k, v in items) if items else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default=str(ROOT / "tests/unit/text/data/announce_holdout.tsv"))
    parser.add_argument("--out", default="out/announce-ear")
    parser.add_argument("--part", choices=("both", "set", "replies"), default="both", help="which comparison to run")
    parser.add_argument("--cut", action="store_true", help="replies: the default server also cuts a first chunk")
    parser.add_argument("--windows", default="",
                        help="replies: engine.windows overrides for the default server (pad_frames=0,closing_weight=1)")
    parser.add_argument("--more", action="store_true", help="replies: the second dozen too (MORE_REPLIES)")
    parser.add_argument("--third", action="store_true", help="replies: the third and fourth dozen too (THIRD_REPLIES)")
    parser.add_argument("--whole-from", help="replies: the whole-sentence rows of an earlier run's JSON, this machine "
                        "(whole renders read no clock: its transcripts repeat to the letter), not heard again")
    parser.add_argument("--voices", nargs="+", default=[None],
                        help="replies: speak them in each of these voices (more syllables, a tighter bound)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = load_cases(args.set)
    replies = REPLIES + (MORE_REPLIES if args.more else []) + (THIRD_REPLIES if args.third else [])
    configs = Path(tempfile.mkdtemp())
    nocut, default = configs / "whole.yaml", configs / "default.yaml"
    nocut.write_text("engine:\n  windows:\n    first_frames: 0\ntext:\n  first_clause_chars: 0\n", encoding="utf-8")
    default.write_text(f"text:\n  first_clause_chars: {12 if args.cut else 0}\n" + windows_yaml(args.windows),
                       encoding="utf-8")
    ours = _server("fasttts", str(default), out / "logs")
    plain = None
    rates: dict[str, float] = {}
    rows: dict[str, list[dict]] = {}
    try:
        if args.part in ("both", "set"):
            spoken = [c.spoken for c in cases]
            rates["raw"], rows["raw"] = _score(ours.uri, [c.text for c in cases], spoken)
            rates["spoken"], rows["spoken"] = _score(ours.uri, spoken, spoken)
        if args.part in ("both", "replies"):
            rates["cut"], rows["cut"] = _score(ours.uri, replies, replies, tuple(args.voices))
            ours.stop()
            if args.whole_from:
                rates["no_cut"], rows["no_cut"] = _earlier(args.whole_from, rows["cut"])
            else:
                plain = _server("fasttts-nocut", str(nocut), out / "logs")
                rates["no_cut"], rows["no_cut"] = _score(plain.uri, replies, replies, tuple(args.voices))
    finally:
        ours.stop()
        if plain:
            plain.stop()
    report = {"set": args.set, "sentences": len(cases), "replies": replies, "rates": rates, "rows": rows}
    if "cut" in rows and "no_cut" in rows:
        report["difference"] = paired_difference(rows["cut"], rows["no_cut"])
    (out / f"announce_ear-{args.part}.json").write_text(json.dumps(report, ensure_ascii=False, indent=1),
                                                        encoding="utf-8")
    labels = {"raw": (f"{Path(args.set).name} as written (our front end)", len(cases)),
              "spoken": ("the same, sent as the expected spoken forms", len(cases)),
              "cut": ("replies, default config " + ("plus the first-chunk cut" if args.cut else "(CPU: frame windows)"),
                      len(replies) * len(args.voices)),
              "no_cut": ("the same replies, every sentence rendered whole, no cut", len(replies) * len(args.voices))}
    print("| input | texts | ear error (toneless pinyin) |\n|---|---|---|")
    for key, rate in rates.items():
        print(f"| {labels[key][0]} | {labels[key][1]} | {rate:.2%} |")
    if diff := report.get("difference"):
        print(f"\ndefault minus whole: {diff['points']:+.2f} points, 95% interval {diff['ci95'][0]:+.2f} to "
              f"{diff['ci95'][1]:+.2f} (paired bootstrap over {diff['texts']} texts, {diff['texts_differing']} heard "
              f"differently; standard error {diff['se']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

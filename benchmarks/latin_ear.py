"""The ear (Whisper base, CPU) on Latin names inside Chinese announcements: our name table against none (issue 15).

Each name of the tables (``text/data/latin.tsv`` and ``chinese_names.tsv``, as HA announcements write them: Wi-Fi,
HomePod, iPhone, Xiaomi ...) is said in two carrier sentences, in four voices, by two servers through the real
Wyoming client:

- ours as shipped;
- the same server with the name tables emptied (``latin.tsv`` and ``chinese_names.tsv``), so every name takes the
  path it would take without us: misaki's English lexicon (Google, Sony), camel-case parts (HomePod → Home Pod),
  toneless pinyin (Xiaomi) or spelled letter by letter.

Whisper base is a Chinese listener here, and three verdicts on what it wrote where the name stands (the carrier's
words stripped) tell how the name came across:

- *named*: it writes the name, its letters and digits with case and spaces aside (Wi-Fi, WiFi, wifi), or one of the
  Chinese names it goes by (Xiaomi 小米, WeChat 微信), compared in toneless pinyin so that homophones (晓米) count;
- *spelled*: it writes a run of capital letters that is not the name (XI AOMA, SAMSU NG, D-A-O-B-AO), or single
  letters joined by dashes or dots: the name came across as letters read out, which is how a name the server does
  not know sounds and what the issue asks us not to do;
- *as Chinese syllables*: it writes only characters there (挖发 for WiFi, 三松 for Samsung, 阿里贝 for Alipay): the
  name came across as a word in a Chinese voice, the way a Chinese speaker says a foreign name.

Whisper base writes Latin words unevenly, so these are comparisons of the two servers on the same judge, not
absolutes; a name named less often, or spelled more often, with the table than without is the one to look at.

    python benchmarks/latin_ear.py [--out out/latin-ear] [--voices zf_xiaobei zf_xiaoxiao zm_yunjian zm_yunxi]
    python benchmarks/latin_ear.py --rescore out/latin-ear/latin_ear.json   # the verdicts again, no synthesis
    python benchmarks/latin_ear.py --pinyin   # Chinese names in pinyin (Meituan): as their characters vs toneless

About 5 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path

from pypinyin import lazy_pinyin

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from ear import transcribe  # noqa: E402

from wyoming_fasttts.bench.servers import free_port, start  # noqa: E402
from wyoming_fasttts.client import say  # noqa: E402
from wyoming_fasttts.text.data import load_table  # noqa: E402

NAMES: dict[str, tuple[str, ...]] = {
    # the table's name (as written in an announcement): the Chinese names it goes by, if any
    "WiFi": ("无线",), "Wi-Fi": ("无线",), "iPhone": ("苹果手机",), "iPad": (), "iOS": (),
    "Home Assistant": (), "HomeKit": (), "Xiaomi": ("小米",), "Google": ("谷歌",), "YouTube": ("油管",),
    "WeChat": ("微信",), "OK": (), "iPhone Pro": (), "MacBook Pro": (), "iPad mini": (),
    "HomePod": (), "AirPods": (), "Sonos": (), "Spotify": (), "Xbox": (), "Zigbee": (), "OPPO": (), "vivo": (),
    "Huawei": ("华为",), "Redmi": ("红米",), "Samsung": ("三星",), "Sony": ("索尼",), "Philips": ("飞利浦",),
    "Aqara": ("绿米",), "Tuya": ("涂鸦",), "Yeelight": ("易来",), "Roborock": ("石头",), "Ecovacs": ("科沃斯",),
    "Tapo": (), "Arlo": (), "Nanoleaf": (), "Roku": (), "Kodi": (), "Plex": (), "Jellyfin": (),
    "Synology": ("群晖",), "Gmail": (), "Teams": (), "Bilibili": ("哔哩哔哩", "B站"), "Taobao": ("淘宝",),
    "Alipay": ("支付宝",), "Lenovo": ("联想",), "Bose": ("博士",), "Garmin": ("佳明",), "Fitbit": (),
    "ESPHome": (), "Plus": (), "Max": (), "Mini": (), "App": (),
}
PINYIN_NAMES: dict[str, tuple[str, ...]] = {
    # ``--pinyin``: Chinese names written in pinyin that neither latin.tsv nor the English lexicon holds; ours says
    # those in chinese_names.tsv as their characters, the second server as toneless syllables (``pinyin_phonemes``).
    # Midea is in neither table (an English brand name, not pinyin): both servers read it the same way
    "Meituan": ("美团",), "Douyin": ("抖音",), "Pinduoduo": ("拼多多",), "Jingdong": ("京东",), "Eleme": ("饿了么",),
    "Zhihu": ("知乎",), "Weibo": ("微博",), "Feishu": ("飞书",), "Haier": ("海尔",), "Changhong": ("长虹",),
    "Xiaodu": ("小度",), "Ximalaya": ("喜马拉雅",), "Midea": ("美的",), "Baidu": ("百度",),
}
CARRIERS = ("已经为您打开{}。", "{}的连接已经断开了，请检查一下。")
_WORDS = re.compile(r"[a-z0-9]+")
# What Whisper wrote in the name's place: after 打开 (Whisper may add 了), or before 的连接 (traditional forms too).
_AFTER = re.compile(r"打[开開]了?(.*?)[，,。.！!？? ]*$")
_BEFORE = re.compile(r"^(.*?)的[连連]接")
_CAPITALS = re.compile(r"[A-Z0-9][A-Z0-9 .-]{2,}")
_JOINED_LETTERS = re.compile(r"(?<![A-Za-z])[A-Za-z][-.][A-Za-z]")
_HAN = re.compile(r"[\u4e00-\u9fff]")


def _letters(text: str) -> str:
    return "".join(_WORDS.findall(text.lower()))


def heard_as(name: str, heard: str) -> bool:
    """Whether ``heard`` (Whisper's transcript) writes ``name``: in Latin letters, or one of its Chinese names."""
    if _letters(name) in _letters(heard):
        return True
    sounds = " ".join(lazy_pinyin(heard))
    return any(" ".join(lazy_pinyin(alias)) in sounds for alias in NAMES[name])


def in_place(sent: str, heard: str) -> str:
    """What ``heard`` holds where ``sent``'s carrier put the name ("" where Whisper lost the carrier's words)."""
    found = (_AFTER if sent.startswith(CARRIERS[0][:2]) else _BEFORE).search(heard)
    return found.group(1).strip() if found else ""


def spelled(name: str, heard: str) -> bool:
    """Whether ``heard`` (the name's place) reads as letters said one by one rather than as the name."""
    runs = [run for run in _CAPITALS.findall(heard) if _letters(run) not in ("", _letters(name))]
    return bool(runs or _JOINED_LETTERS.search(heard))


def verdicts(row: dict) -> dict[str, bool]:
    """The three verdicts of the module docstring on one transcript."""
    place = in_place(row["sent"], row["heard"])
    return {"named": heard_as(row["name"], row["heard"]), "spelled": spelled(row["name"], place),
            "syllables": bool(place) and bool(_HAN.search(place)) and not re.search("[A-Za-z]", place)}


def _serve(name: str, logs: Path, *, table: bool, pinyin: bool = False):
    port = free_port()
    argv = ["serve", "--uri", f"tcp://127.0.0.1:{port}", "--http-uri", "", "--engine", "onnxruntime"]
    boot = "import sys; from wyoming_fasttts.__main__ import main; "
    if not table and pinyin:  # Chinese names as toneless syllables, as before chinese_names.tsv
        boot += "import wyoming_fasttts.text.latin as latin; latin._chinese_names = dict; "
    elif not table:  # the name tables emptied before the first request reads them; the rest of the server as shipped
        boot += "import wyoming_fasttts.text.latin as latin; latin._table = dict; latin._chinese_names = dict; "
    return start(name, [sys.executable, "-c", boot + "sys.exit(main())", *argv], port, logs)


def _listen(uri: str, voices: list[str]) -> list[dict]:
    rows = []
    for name in NAMES:
        for carrier in CARRIERS:
            for voice in voices:
                text = carrier.format(name)
                heard = transcribe(bytes(asyncio.run(say(uri, text, voice=voice)).pcm))
                rows.append({"name": name, "voice": voice, "sent": text, "heard": heard})
    return rows


def report(rows: dict[str, list[dict]], voices: list[str]) -> dict:
    """Per name and over all names, how often each server's audio got each verdict."""
    judged = {label: [{**row, **verdicts(row)} for row in rs] for label, rs in rows.items()}
    totals = {label: {v: sum(r[v] for r in rs) for v in ("named", "spelled", "syllables")}
              for label, rs in judged.items()}
    per_name = {name: {label: {v: sum(r[v] for r in rs if r["name"] == name) for v in ("named", "spelled")}
                       for label, rs in judged.items()} for name in NAMES}
    return {"voices": voices, "carriers": CARRIERS, "per_name_of": len(CARRIERS) * len(voices),
            "of": len(CARRIERS) * len(voices) * len(NAMES), "totals": totals, "per_name": per_name, "rows": judged}


def _print(result: dict) -> None:
    said, of = result["per_name_of"], result["of"]
    print(f"| name (each said {said} times) | named: table / none | spelled: table / none |\n|---|---|---|")
    for name, counts in result["per_name"].items():
        ours, none = counts["table"], counts["no_table"]
        print(f"| {name} | {ours['named']} / {none['named']} | {ours['spelled']} / {none['spelled']} |")
    print(f"\n| verdict (of {of}) | our name table | no name table |\n|---|---|---|")
    for verdict in ("named", "spelled", "syllables"):
        print(f"| {verdict} | {result['totals']['table'][verdict]} | {result['totals']['no_table'][verdict]} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/latin-ear")
    parser.add_argument("--voices", nargs="+", default=["zf_xiaobei", "zf_xiaoxiao", "zm_yunjian", "zm_yunxi"])
    parser.add_argument("--pinyin", action="store_true", help="PINYIN_NAMES: as their characters against toneless")
    parser.add_argument("--rescore", type=Path,
                        help="a latin_ear.json of an earlier run: judge its transcripts again (into --out)")
    args = parser.parse_args()
    if args.pinyin:  # the verdicts look the names up here
        NAMES.clear()
        NAMES.update(PINYIN_NAMES)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.rescore:
        earlier = json.loads(args.rescore.read_text(encoding="utf-8"))
        result = report(earlier["rows"], earlier["voices"])
        (out / "latin_ear.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
        _print(result)
        return 0
    table = {word for word, _ in load_table("latin.tsv") + load_table("chinese_names.tsv")}
    missing = [n for n in NAMES if not set(n.lower().split()) & table]
    assert args.pinyin or not missing, f"names the table does not hold: {missing}"
    rows: dict[str, list[dict]] = {}
    for label, with_table in (("table", True), ("no_table", False)):
        server = _serve(f"latin-{label}", out / "logs", table=with_table, pinyin=args.pinyin)
        try:
            rows[label] = _listen(server.uri, args.voices)
        finally:
            server.stop()
    result = report(rows, args.voices)
    (out / "latin_ear.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    _print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

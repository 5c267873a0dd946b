"""Spoken form of Chinese text: every number read out the way a native reader would, symbols dropped.

Rules run in a fixed order, most specific first (a date must be read before its parts look like a
subtraction), each one a regular expression plus a reader. The words that steer a reading (measure words
that take 两, cues for digit-by-digit numbers, units) live in ``data/normalize.yaml``.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from .data import load_yaml
from .numbers import DIGITS, cardinal, decimal, digits

_NUM = r"\d+(?:\.\d+)?"
# A whole number with thousands separators (1,650).
_GROUPED = r"\d{1,3}(?:,\d{3})+"
_HAN = re.compile(r"[\u3400-\u9fff]")
# Minutes of arc, and seconds after them, as a prime and a double prime write them (54'27"; NFKC makes ″ two primes).
_ARC = r"(\d{1,2})['′](?:(\d{1,2}(?:\.\d+)?)(?:′′|″|\"))?"
# An amount after a currency sign: digits, thousands separators, decimals (¥1,299.50).
_AMOUNT = r"\d(?:\d|,(?=\d{3}))*(?:\.\d+)?"
_Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]


# HTML an LLM's reply may carry: tags that break a line or a block (said as a pause) and inline ones (unsaid).
_BLOCK_TAGS = {"br", "p", "div", "li", "tr", "hr", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6"}
_INLINE_TAGS = {"b", "i", "u", "s", "em", "strong", "span", "a", "font", "code", "small", "big", "sub", "sup", "mark",
                "del", "ins"}


def _alternation(words: Iterable[str], *, whole_latin: bool = False) -> str:
    """The words as one regex alternation, longest first; with ``whole_latin``, a word that starts with a Latin letter
    (QQ, ID) matches only where no letter comes right before it (not the ID inside RAID)."""
    bound = "(?<![A-Za-z])" if whole_latin else ""
    return "|".join((bound if w[0].isascii() and w[0].isalpha() else "") + re.escape(w)
                    for w in sorted(words, key=len, reverse=True))


class _Rules:
    """The compiled rules; built once from the data file."""

    def __init__(self) -> None:
        d = load_yaml("normalize.yaml")
        self.d = d
        self.units = d["units"]
        self.temperature = set(d["temperature_units"])
        self.pauses = str.maketrans(d["pauses"])
        ordinal, liang = _alternation(d["ordinal_words"]), _alternation(d["liang_words"])
        self.ordinal_re = re.compile(rf"\s*(?:到\d+)?(?:{ordinal})")
        self.liang_re = re.compile(rf"\s*(?:到\d+)?(?:{liang})")
        self.unit_cues = {u: re.compile(_alternation(words)) for u, words in d["unit_cues"].items()}
        self.year_before = re.compile(rf"(?:{_alternation(d['year_count_before'])})\s*$")
        self.year_after = re.compile(rf"(?:{_alternation(d['year_count_after'])})")
        self.short_year_after = re.compile(rf"(?:{_alternation(d['short_year_count_after'])})")
        self.year_context = re.compile(rf"(?:{_alternation(d['year_context_before'])})\s*$")
        self.pre = re.compile(_alternation(d["pre_nfkc"]))
        self.unit_re = re.compile(rf"\s*(?:{_alternation(self.units)})(?![A-Za-z])")
        self.unit_chain = re.compile(rf"\d\s*(?:{_alternation(self.units)})$")
        # A unit after a number or the second end of a range (2kg, 2-3kg): the count before it takes 两.
        self.unit_after = re.compile(rf"\s*(?:到\d+(?:\.\d+)?)?\s*({_alternation(self.units)})(?![A-Za-z])")
        # What a rate's "/" may follow: a measure word, a unit or a currency (元/度, 次/分), not any word (早/晚).
        measures = {*d["liang_words"], *d["per_words"], *map(str, self.units.values()), *d["currency_prefix"].values()}
        self.measure_before = re.compile(rf"(?:{_alternation(measures)})$")
        self.flight_cue = re.compile(_alternation(d["flight_cues"]))
        # A reading's name (AQI, BPM, 心率) labels the number after it: that number is its value.
        names = _alternation(d["reading_names"], whole_latin=True)
        self.reading_name = re.compile(names)
        self.reading_before = re.compile(rf"(?:{names})[:：]?\s*$")
        self.update_before = re.compile(rf"(?:{_alternation(d['update_verbs'])})\s*$")
        self.version_before = re.compile(
            rf"(?:(?<![A-Za-z])[vV]|(?:{_alternation(d['version_cues_before'])})[:：]?\s*)$")
        self.not_measure = re.compile(rf"\s*(?:{_alternation(d['not_measure_words'])})")
        self.transfer_after = re.compile(rf"{_NUM}\s*(?:{_alternation(d['transfer_units'])})(?![A-Za-z])")
        self.countdown_before = re.compile(rf"(?:{_alternation(d['countdown_cues'])})[:：]?\s*$")
        self.coordinate_cue = re.compile(_alternation(d["coordinate_cues"]))
        self.ratio_before = re.compile(rf"(?:{_alternation(d['ratio_cues'])})[:：\s]*$")
        self.seat_clause = re.compile(rf"{_alternation(d['seat_cues'])}|\d\s*车[:：\s]*$")
        self.seat_before = re.compile(rf"(?:{_alternation(d['seat_words'])})[:：\s]*$")
        self.day_part_before = re.compile(rf"(?:{_alternation(d['day_parts'])})\s*$")
        self.date_colon_before = re.compile(rf"(?:{_alternation(d['date_words_before_colon'])})\s*[:：]\s*$")
        self.colon_before = re.compile(r"[:：]\s*$")
        ends = _alternation(d["tilde_range_ends"])
        self.tilde_range_before = re.compile(rf"(?:{ends})$")
        self.tilde_range_after = re.compile(rf"(?:{ends})")
        self.name_suffix_units = set(d["name_suffix_units"])
        self.unit_names = {u: re.compile(_alternation(words)) for u, words in d["unit_names_before"].items()}
        self.address_symbols = d["address_symbols"]
        self.rules = self._compile(d)

    def _compile(self, d: dict[str, Any]) -> list[_Rule]:
        unit = _alternation(self.units)
        money = _alternation(d["currency_prefix"])
        signs = "".join(sorted({re.escape(symbol[-1]) for symbol in d["currency_prefix"]}))
        cue_before = _alternation(d["digit_cues_before"], whole_latin=True)
        # A cue word and what may stand between it and its number; a code's cue (a draw's 开奖号码 and 中奖号码 name a
        # list of numbers, not a code).
        cue = rf"(?:{cue_before})(?:是|为|：|:|\s)*"
        code_cue = rf"(?<![开中]奖){cue}"
        self.cue_end = re.compile(rf"{code_cue}$")
        cue_after = _alternation(d["digit_cues_after"])
        ratio = _alternation(d["ratio_cues"])
        math = "".join(re.escape(s) for s in d["math_symbols"])
        service = _alternation(d["service_numbers"])
        compare = _alternation(d["compare_symbols"])
        codes = _alternation(d["currency_codes"])
        score = _alternation(d["score_cues"])
        score_after = _alternation(d["score_cues_after"])
        pay = _alternation(d["pay_cues"])
        links = _alternation(d["reading_links"])
        festival = _alternation(d["festival_cues"])
        months = _alternation(d["english_months"])
        per = _alternation(d["per_words"])
        # A clock or ratio pair is not part of a longer one (12:03:45) but may follow a colon (提醒：08:05).
        pair = r"(?<!\d[:：])(?<![\d.])"
        train = _alternation(d["train_after"])
        change = _alternation(d["change_cues"])
        arrows = "".join(re.escape(a) for a in d["change_arrows"])
        gate = _alternation(d["gate_words"])
        seat = _alternation(d["seat_words"])
        words = _alternation({str(w) for w in d["currency_prefix"].values()})
        # A reading: an optional sign or currency sign, a number and its unit, % or ‰ (-2.5℃, 48%, 2000mAh, ¥20).
        reading = (rf"(?<![\dA-Za-z.])[-+]?(?:(?:{money})\s*{_NUM}|{_NUM}\s*(?:(?:{unit})(?![A-Za-z])|[%‰]))")
        # ... and in a status line also a number and a word unit (温度 25度 湿度 40%).
        status = rf"(?:{reading}|(?<![\dA-Za-z.]){_NUM}\s*(?:{_alternation(d['status_units'])}))"
        schemes = _alternation(d["address_schemes"])
        tlds, extensions = _alternation(d["address_tlds"]), _alternation(d["file_extensions"])
        label = r"[A-Za-z\d](?:[A-Za-z\d-]*[A-Za-z\d])?"
        path = r"(?:/[A-Za-z\d\-._~/?#=&%+@]*)?"
        return [
            # Web and e-mail addresses and file names first, before their digits, dots and dashes look like numbers,
            # decimals, sentence ends or ranges: said as typed, a symbol by its name (_address). A trailing mark is
            # the sentence's, not the address's.
            (re.compile(rf"(?<![A-Za-z])(?:{schemes})://[A-Za-z\d\-._~:/?#\[\]@!$&*+,;=%]*[A-Za-z\d/#=_~-]",
                        re.IGNORECASE), self._address),
            (re.compile(r"(?<![A-Za-z\d._%+-])[A-Za-z\d][A-Za-z\d._%+-]*@" + label + r"(?:\." + label + r")+"),
             self._address),
            (re.compile(rf"(?<![A-Za-z\d@./_-])(?:{label}\.)+(?:{tlds})(?![A-Za-z\d-])(?::\d{{1,5}}(?!\d))?{path}"
                        r"(?<![.?=&%+])", re.IGNORECASE), self._address),
            (re.compile(rf"(?<![A-Za-z\d@./_-])[A-Za-z\d_-]+(?:\.[A-Za-z\d_-]+)*\.(?:{extensions})(?![A-Za-z\d])",
                        re.IGNORECASE), self._address),
            # A MAC address (00:1A:2B:3C:4D:5E) is said as typed, as the addresses above; it had been read as clock
            # times and ratios (零比一A，…).
            (re.compile(r"(?<![A-Za-z\d:-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}(?![A-Za-z\d:-])"),
             self._address),
            # @ standing alone between words (运动 @ 车库) is "at", 在; it had been dropped.
            (re.compile(r"(?<=\S)[ \t]+@[ \t]+(?=[^\s@])"), lambda m: "在"),
            # A Latin name that ends in digits (PM2.5, PM10, CO2) and a number after a space are two readings: a pause
            # between them, or PM2.5 12 would be heard as 二点五十二 (a clock time after a flight number is left as the
            # sets read it).
            # So is a model's number after a word and a space before a reading with its unit (RTX 3060 12GB, 小米 13
            # 256GB: had run together as 三零六零十二GB); other spaced digits are one number's groups (Tel 138 2046
            # 7719).
            # A year joined to a quarter or a half (2026Q4, Q4 2026, H1 2026, FY2026 as FY's digits are) is a year,
            # digit by digit, 年: it had been a count (两千零二十六Q四).
            (re.compile(r"(?<![\d.A-Za-z])((?:19|20)\d\d)\s*(?=[QH][1-4](?![\dA-Za-z]))"),
             lambda m: digits(m[1]) + "年"),
            (re.compile(r"(?<![A-Za-z\d])([QH][1-4])\s+((?:19|20)\d\d)(?![\d.])"), self._quarter_year),
            # A decade as English writes it ('90s, the 1980s) is 年代, its year digit by digit (九零年代 as 九零后 is
            # said; the s had been seconds: 九十秒). Without the apostrophe or "the" it stays seconds (耗时 1990s).
            (re.compile(r"(?:(?<![A-Za-z\d'’])['’]|(?<=[Tt]he ))((?:19|20)?\d0)s(?![A-Za-z\d])"),
             lambda m: digits(m[1]) + "年代"),
            (re.compile(r"(?<=[A-Za-z])(\d+(?:\.\d+)?)[ \t]+(?=-?\d)(?!\d{1,2}[:：]\d)"), lambda m: m[1] + "，"),
            (re.compile(rf"(?<=[^\d\s.,:：/\-][ \t])(\d+(?:\.\d+)?)[ \t]+(?={_NUM}\s*(?:{unit})(?![A-Za-z]))"),
             lambda m: m[1] + "，"),
            # A standard's number (GB 18030-2022, GB/T 15834, ISO 9001, IEEE 802.11ax) is a code, digit by digit with 1
            # as 幺 as after any Latin word (GB2312), its year after 杠 as a year is said, the slash of GB/T unsaid.
            (re.compile(rf"(?<![A-Za-z])({_alternation(d['standard_prefixes'])})\s*(\d+(?:\.\d+)*)"
                        r"(?:\s*[-—]\s*(\d{4}))?(?![\d.])"),
             lambda m: m[1].replace("/", " ") + "点".join(_read_code(p) for p in m[2].split("."))
             + ("杠" + digits(m[3]) if m[3] else "")),
            # & between two words is 和 (张三&李四, AT&T); inside an address, read above, it is named like its other
            # symbols (address_symbols), so this comes after the address rules.
            (re.compile(r"\s*&\s*"), lambda m: "和"),
            # Three or more two-digit numbers set apart by spaces are a list, a pause between them (22 23 24 度
            # had been 二十二二十三二十四度); zero-padded, as lottery draws write them (开奖号码 03 15 22 28 33),
            # each its two digits (they had run together as one code, 零三幺五二二…). Other spaced digits stay one
            # number's groups (a phone number's 138 2046 7719). After a code's cue word they are that code (below).
            (re.compile(r"(?<![\d.:\-])\d{2}(?:[ \t]+\d{2}){2,}(?![\d.:\-])"),
             self._spaced_numbers),
            # A space between a number and the word after it (2 小时, 2026 年, 2-4 天, as LLM replies write; NFKC made
            # U+3000 and NBSP plain spaces) is never said: dropping it once here lets every rule that reads the word
            # after a number (年 after a year, a measure word that takes 两, a range's far end) see that word.
            (re.compile(r"(?<=\d)[ \t]+(?=[\u3400-\u9fff])"), lambda m: ""),
            # Consumption per hundred kilometres (6.8L/100km, 13.5kWh/100km) is said 每百公里, as on a car's display.
            (re.compile(r"(?<=[A-Za-z\u3400-\u9fff])\s*/\s*100\s*(?:km|公里)(?![A-Za-z])"), lambda m: "每百公里"),
            # Adults and children counted in a pair (2大1小, a booking or a ticket): each a count, so 2 is 两.
            (re.compile(r"(?<![\d.])(\d{1,2})\s*大\s*(\d{1,2})\s*小(?!时)"),
             lambda m: cardinal(m[1], liang=True) + "大" + cardinal(m[2], liang=True) + "小"),
            # Three or four digits before a product line's suffix word are a model number (三星 980 Pro, 870 EVO), digit
            # by digit with 1 as 幺 as after a Latin word (RTX 4090); one or two are a generation (小米 14 Ultra).
            (re.compile(r"(?<![\d.,A-Za-z])(\d{3,4})\s+(?=(?:Pro|Max|Plus|Ultra|Mini|mini|Lite|Air|SE|EVO|Evo|Neo|Ti|XT)"
                        r"(?![A-Za-z]))"), lambda m: _read_code(m[1])),
            # Three or more digits with a leading zero before 号 are a code, said as written (086号车位 →
            # 零八六号车位): a count has no leading zero to say.
            (re.compile(r"(?<![\d.,])(0\d{2,})(?=\s*号)"), lambda m: _read_code(m[1])),
            # Eight digits that make a date after a word for one (生产日期 20261201, 有效期至 20270630) are that
            # date, as labels and logs write it; they had been read as a code (二零二六幺二零幺).
            (re.compile(rf"((?:{_alternation(d['compact_date_cues'])})(?:是|为|：|:|\s)*)((?:19|20)\d\d)(0[1-9]|1[0-2])"
                        r"(0[1-9]|[12]\d|3[01])(?![\d.,])"),
             lambda m: f"{m[1]}{m[2]}年{int(m[3])}月{int(m[4])}日"),
            # A card or account number in groups of four (6222 0210 0188 7765) is a code with or without a cue word.
            (re.compile(r"(?<![\d.,])\d{4}(?:[ -]\d{4}){2,4}(?:[ -]\d{1,3})?(?![\d.,])"), lambda m: _read_code(m[0])),
            # A line's leading bullet (-, *, •) or Markdown heading (#) is decoration, not a minus or 号.
            (re.compile(r"(?m)^[ \t]*(?:[-*+•]|#{1,6})[ \t]+"), lambda m: ""),
            # An HTML tag in an LLM's reply (<b>注意</b>, 第一行<br>第二行) is markup, not words: a line or block tag
            # is a pause, an inline one unsaid (its name was read as a Latin word). Only HTML's own tag names, with
            # attributes only as name=value (not <提示>, 张三 <zs@a.cn>, x < y, a<b and c>d).
            (re.compile(rf"</?({_alternation([*_BLOCK_TAGS, *_INLINE_TAGS])})"
                        r"""(?:\s+[\w:-]+\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s"'<>]+))*\s*/?>""", re.IGNORECASE),
             lambda m: "，" if m[1].lower() in _BLOCK_TAGS else ""),
            # A Markdown link or image says its text, not its target ([设置页面](http://ha.local/config) → 设置页面; the
            # address had been read after it); a task box says whether it is done (- [x] 洗衣服 → 已完成，洗衣服; its x
            # had been read), a footnote mark ([^1]) is unsaid, a code fence's language (```yaml) a pause.
            (re.compile(r"!?\[([^\[\]\n]*)\]\([^()\s]*(?:\s+\"[^\"\n]*\")?\)"), lambda m: m[1]),
            (re.compile(r"(?m)^([ \t]*)\[([ xX])\][ \t]+"), lambda m: m[1] + ("" if m[2] == " " else "已完成，")),
            (re.compile(r"\[\^[^\]\s]+\]"), lambda m: ""),
            (re.compile(r"(?m)^[ \t]*```[\w+-]*[ \t]*$"), lambda m: "，"),
            # A Markdown table as an LLM writes one: its rule line unsaid, each row's cells with a pause between
            # (| 9:00 | 例会 | had run together: 九点例会); struck-out text (~~25℃~~) is said without its marks,
            # which had been read 约.
            (re.compile(r"(?m)^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?$\n?"), lambda m: ""),
            (re.compile(r"(?m)^[ \t]*\|(.*)\|[ \t]*$"), lambda m: "，".join(c.strip() for c in m[1].split("|"))),
            # Only as Markdown writes it: at a line's start or after a space or mark, no space inside (收到~~我这就去~~
            # is a chat's tildes).
            (re.compile(r"(?:^|(?<=[\s:：,，(（]))~~([^~\s](?:[^~\n]*[^~\s])?)~~(?=\s*([\w\u3400-\u9fff]?))",
                        re.MULTILINE),
             lambda m: m[1] + ("，" if m[2] else "")),
            # Lettered choices (A. 是  B. 否), a line with an A. and a B.: each letter and a pause, not a full stop
            # after it, and a pause before the next (维生素 C. 另外 is a sentence's end).
            (re.compile(r"(?m)^.*(?<![A-Za-z.])A\.[ \t]+[\u3400-\u9fff].*(?<![A-Za-z.])B\.[ \t]+[\u3400-\u9fff].*$"),
             lambda m: _CHOICE.sub(lambda c: (c[1][0] + "，" if c[1] else "") + c[2] + "，", m[0])),
            # Languages and programs named with ++ or # (C++ → C加加, Notepad++, C# → C sharp, F#): the marks had
            # been dropped.
            (re.compile(r"(?<![A-Za-z\d])([A-Za-z]+)\+\+(?![+A-Za-z\d])"), lambda m: m[1] + "加加"),
            (re.compile(r"(?<![A-Za-z\d])([CF])#(?![#A-Za-z\d])"), lambda m: m[1] + " sharp"),
            # k and w as thousands and ten thousands after a currency sign or a word about pay, or before 块/元
            # (¥1.2w, 月薪 15k-20k, 3w块): ¥1.2w had been 一元两角w, a hundred-thousandth of it; elsewhere W is watts.
            # After a currency sign M and B are millions and billions ($1.2M → 一百二十万美元, had been 一美元两角M).
            (re.compile(rf"((?:{money})\s*)({_NUM})([wWkKMB])?(?:(\s*[-~]\s*)({_NUM})([wWkKMB]))?(?![A-Za-z])"),
             self._thousands),
            # After a word about pay W stays watts (电源预算 650W) and K before a screen a resolution (预算 4K 显示器).
            (re.compile(rf"((?:{pay})[:：]?(?:是|为|约)?\s*)({_NUM})([wkK])?(?:(\s*[-~]\s*)({_NUM})([wkK]))?"
                        r"(?![A-Za-z])(?!\s*[显屏电视])"), self._thousands),
            (re.compile(rf"(?<![A-Za-z\d.])({_NUM}[wWkK])(?=\s*[块元])"), lambda m: _shorthand(m[1])),
            # An amount after or before an ISO currency code (USD 1,000, 300 HKD): money, not a model number's digits.
            (re.compile(rf"(?<![A-Za-z\d])(?P<sign>-?)(?<![A-Za-z])(?P<code>{codes})\s*(?P<minus>-?)(?P<amount>{_AMOUNT})(?P<big>[千万亿])?"
                        r"(?![\d.])"),
             self._coded_money),
            (re.compile(rf"(?<![\d.])(?P<minus>-?)(?P<amount>{_AMOUNT})(?P<big>[千万亿])?\s*(?P<code>{codes})(?![A-Za-z])"),
             self._coded_money),
            # A numbered list item at the start of a line (1. 取快递, 1) 取快递, 1️⃣ 取快递; ① became 1. above): its
            # number, then a pause, not a decimal point.
            # A digit may start the item after a space (1. 09:30 视频会议): a decimal's point has no space after it.
            (re.compile(r"(?m)^([ \t]*)(\d{1,2})(?:[.)]|\ufe0f?\u20e3)(?:\s*(?=[^\d\s.])|[ \t]+(?=\d))"),
             lambda m: m[1] + cardinal(m[2]) + "，"),
            # Lines joined by slashes (换乘 1/2/8 号线, 11/25/42 路) are each said, not a fraction or date; before 路
            # only three or more (2/3 路程 is a fraction, 12/25 路由器 a date). 第 before a slash pair counts a step of
            # several (第2/5步 → 第二步，共五步; had been 第五分之二步), or names two (第3/4季度 → 第三，四季度).
            (re.compile(r"(?<![\d./])(\d{1,3}(?:\s*/\s*\d{1,3})+(?=\s*号线)|\d{1,3}(?:\s*/\s*\d{1,3}){2,}(?=\s*路))"),
             lambda m: "、".join(re.split(r"\s*/\s*", m[1]))),
            (re.compile(r"第\s*(\d{1,3})\s*/\s*(\d{1,3})\s*(?=([\u3400-\u9fff]))"), self._nth_of),
            # Two neighbouring digits joined by 、 before what they count are an estimate, said run together as
            # written in characters (3、4 个人 → 三四个人, 1、2 天 → 一两天; had been 三，四个人); after 第 each
            # number of the list is an ordinal (第 1、2 名 → 第一，第二名; the 2 had been 两).
            (re.compile(r"(?<![\d.、])([1-9])\s*、\s*([2-9])(?![\d.、])"), self._estimate),
            (re.compile(r"第\s*\d{1,3}(?:\s*、\s*\d{1,3})+"), lambda m: re.sub(r"、\s*", "、第", m[0])),
            # A slash between two readings that each carry their own unit, % or currency sign (22.5℃ / 48%,
            # 3.7V/2000mAh), the second maybe after its name (12.3℃ / 湿度 80%: the slash had been dropped), is a pause,
            # as a list of readings is said; / before a unit or measure word (元/度, 10元/公斤 20元) stays 每, and
            # between bare numbers a fraction or a date.
            (re.compile(rf"({reading})\s*/\s*(?=(?!{per})[\u3400-\u9fff]{{2,4}}[:：]?\s*{reading}|{reading})"),
             lambda m: m[1] + "，"),
            # ... as is a space between a reading and the next one's name (温度 22.5℃ 湿度 45%, as templates write a
            # status line: they had run together, 摄氏度湿度); a bare number next (5GHz 信道 36) is no reading.
            # Not before a word that carries the sentence on (到 -2℃, 持续 10 分钟, 还需要 25 分钟: `reading_links`).
            (re.compile(rf"({status})[ \t]+(?=(?!{per}|{links})(?:(?![到至])[\u3400-\u9fff]){{1,4}}[ \t]*[:：]?[ \t]*"
                        rf"{status})"),
             lambda m: m[1] + "，"),
            # A serial number after SN or S/N: its colon a pause, the serial digit by digit with 1 as 幺 and its letters
            # as written, however its digits are grouped (SN: 7K20A1193 → SN，七K二零A幺幺九三). SN is followed by a
            # colon, a space or the serial's first digit (not SNMP).
            (re.compile(r"(?<![A-Za-z])(SN|S/N)(\s*[:：]\s*|\s+|(?=\d))"
                        r"([A-Za-z\d]*\d[A-Za-z\d]*(?:[ -][A-Za-z\d]*\d[A-Za-z\d]*)*)(?![A-Za-z\d]|\.\d)"),
             lambda m: "SN" + ("，" if m[2].strip() else "") + _read_code(m[3])),
            (re.compile(rf"(?<![A-Za-z])([{d['plate_provinces']}])([A-Z])\s*[·.]?\s*(?=[A-Z\d]{{5,6}}(?![A-Za-z\d]))"
                        r"([A-Z]*\d[A-Z\d]*)"), self._plate),
            (re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])(?:\s*[:：]\s*(\d{1,5})(?!\d))?"), self._ip),
            # A decimal before ":" and a number is a ratio wherever it stands (2.39:1 → 二点三九比一): no clock has a
            # decimal hour. Not a Latin name's digits before a colon (PM2.5：35 is a reading).
            (re.compile(r"(?<![A-Za-z\d.])(\d+\.\d+)\s*[:：]\s*(\d+(?:\.\d+)?)(?![\d.:：%‰°])"),
             lambda m: decimal(m[1]) + "比" + decimal(m[2])),
            # An abbreviation's dots are not sentence stops (e.g. → 例如, Mr. Wang → Mr Wang; latin_abbreviations);
            # one with a digit right after its dot is a name's number (Vol.5 → Vol点五, as H.265).
            (re.compile(rf"(?<![A-Za-z.])({_alternation(d['latin_abbreviations'])})(?!\d)"),
             lambda m: " " + str(self.d["latin_abbreviations"][m[1]]) + " "),
            # VS without its dot between two sides (湖人VS勇士, 3 vs 2) is 对 as VS. is; it had been two letters. Not
            # beside a Latin word (VS Code).
            (re.compile(r"(?<=[\u4e00-\u9fff\d])\s*(?:VS|vs|Vs)\s*(?=[\u4e00-\u9fff\d])"), lambda m: "对"),
            # A date with its year last (06/12/2026, 25.12.2026): with / month first as in the US, with . day first as
            # in Europe, unless that cannot be (a 13 or more names the day); it had been read as three numbers. Not with
            # dashes: dash-joined groups are a code (取件码 8-3-2016), nor after a letter (v1.2.2026).
            (re.compile(r"(?<![\d/.\-:A-Za-z])(\d{1,2})([/.])(\d{1,2})\2((?:19|20)\d\d)(?![\d/.\-]|\.\d)"),
             self._year_last),
            # An English month name with its day, the year maybe (Dec 6, December 6, 2026, 6 Dec 2026).
            (re.compile(rf"(?<![A-Za-z])({months})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?![\d:]|\.\d)(?:,?\s+((?:19|20)\d\d)(?!\d))?"),
             lambda m: self._english_date(m[1], m[2], m[3])),
            (re.compile(rf"(?<![\d.])(\d{{1,2}})(?:st|nd|rd|th)?\s+({months})(?![A-Za-z])\.?(?:,?\s+((?:19|20)\d\d)(?!\d))?"),
             lambda m: self._english_date(m[2], m[1], m[3])),
            # An English ordinal (1st, 2nd, 21st) is 第…, its suffix not said as a word.
            (re.compile(r"(?<![\d.])第?(\d+)(?:st|nd|rd|th)(?![A-Za-z])"), lambda m: "第" + cardinal(m[1])),
            # A holiday or festival named by its date (5.1假期, 3.15晚会, 618大促; festival_cues): the month as a
            # number, the day digit by digit, 11.11 and 12.12 双十一 and 双十二; not a decimal.
            (re.compile(rf"(?<![\d.])(1[0-2]|[1-9])\.([1-3]?\d)(?=\s*(?:{festival}))"), self._festival),
            (re.compile(rf"(?<![\d.])(618|315|520|818)(?=\s*(?:{festival}))"), lambda m: digits(m[1])),
            # 24/7 is round the clock as 7×24 is (二十四乘七), not a fraction.
            (re.compile(r"(?<![\d./])24\s*/\s*7(?![\d/])"), lambda m: "二十四乘七"),
            (re.compile(r"(?<![\d.])\d+(?:\.\d+)+(?![\d.])"), self._version),
            # An ISO timestamp as automations log it (2026-12-05T21:30:00+08:00): its T had been read and its offset
            # taken for a clock time (八点); the offset is said as UTC's is (UTC加八小时), Z and +00:00 as UTC, and a
            # fraction of a second is not said (as :00 seconds are not). Also as a template prints a state's
            # last_changed (2026-12-06 07:51:02.123456+00:00: a space, always seconds), whose microseconds had
            # been read as digits and its offset as 加零点.
            (re.compile(r"(?<=\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)"
                        r"|[ \t](\d{2}:\d{2}:\d{2}(?:\.\d+)?))(Z|[+-]\d{2}:?\d{2})?(?![\d:])"),
             lambda m: " " + (m[1] or m[2]).split(".")[0] + ("" if m[3] is None else " UTC" + _offset(m[3]))),
            # A span as a template prints a timedelta (1 day, 2:03:04.5 from now() - last_changed): days, hours,
            # minutes and seconds (一天两小时三分四秒); it had been 一day，两点零三分零四秒.
            (re.compile(r"(?<![\d.])(\d+) days?, (\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)?(?![\d:])"),
             lambda m: cardinal(m[1], liang=True) + "天" + _span(m.groups()[1:], ("小时", "分", "秒"))),
            # A state Home Assistant has no value for, in a Chinese sentence (客厅温度 unavailable ℃ → 客厅温度不可用).
            (re.compile(rf"(?<![A-Za-z])({_alternation(d['missing_states'])})(?![A-Za-z])"
                        rf"(?:[ \t]*(?:(?:{unit})(?![A-Za-z])|[%‰]))?"), self._missing_state),
            (re.compile(r"(?<!\d)(\d{4})\s*[-/.]\s*(\d{1,2})\s*[-/.]\s*(\d{1,2})(?![\d.])(?:\s*[日号])?"), self._ymd),
            # A latitude or longitude (31.23°N, 121.47°E) is 北纬/东经 … 度; its degree sign had been dropped
            # (三十一点二三N). Only within a coordinate's range, in a clause about a place or beside its pair (风向
            # 270°W, 角度 45°E are no coordinates).
            # ... also in degrees, minutes and seconds (39°54'27"N → 北纬三十九度五十四分二十七秒): the marks had been
            # dropped.
            (re.compile(rf"(北纬|南纬|东经|西经)?\s*(?<![\d.])(\d{{1,3}}(?:\.\d+)?)°(?:{_ARC})?([NSEW])"
                        r"(?![A-Za-z])"),
             self._coordinate),
            # A wind's compass point after 风向, a bearing before it or not (风向 NW → 风向西北, 风向 270°W → 风向西，
            # 270度): the letters had been spelled, the bearing's degree dropped (两百七十W).
            (re.compile(rf"(风向\s*[:：]?\s*)(?:(\d{{1,3}}(?:\.\d+)?)\s*°\s*)?({_alternation(d['compass_points'])})"
                        r"(?![A-Za-z/])"),
             self._compass),
            # Minutes and seconds of arc after a degree (30°15'): 分 and 秒, as in a coordinate.
            (re.compile(rf"(?<=°){_ARC}"), lambda m: _minutes_seconds(m[1], m[2])),
            # A prime after a number is minutes, a double prime seconds, as sports and training logs time
            # (15'30" → 十五分三十秒, 第90' → 第九十分钟): both had been dropped (十五三十). A prime after a letter
            # (He's) or inside quotes ('5') is no minute mark; a double prime alone (an inch, a quote) is left as
            # it was.
            (re.compile(r"(?<![\d.°'′‘’A-Za-z])(\d{1,3})['′’](\d{1,2}(?:\.\d+)?)(?:′′|″|\"|”)"),
             lambda m: _minutes_seconds(m[1], m[2])),
            (re.compile(r"(?<![\d.°'′‘’A-Za-z])(\d{1,3})(['′’])(?![\dA-Za-z'′’])"), _minute_mark),
            # * between two numbers is a times sign as typed on a keyboard (7*24 小时 had been 七二十四小时).
            (re.compile(r"(?<=\d)[ \t]*\*[ \t]*(?=\d)"), lambda m: "×"),
            # × or x between numbers is 乘 (7×24小时, 120x60cm), a resolution's numbers digit by digit (1920×1080);
            # not inside a name (RTX4090x) or a hex code (0x1F).
            (re.compile(rf"(?<![A-Za-z\d.])({_NUM})((?:\s*[×xX]\s*{_NUM})+)(?![\d.])"), self._times),
            # A rating in full and empty stars (★★★★☆, as reviews show one: three to five in all) is its stars, 四星;
            # it had been dropped as symbols and nothing was said. Not where a number says the rating too (★★★★☆ 4.5
            # 分), nor stars of one kind, which notifications put around a title (★★★ 重要 ★★★), nor a pair (★☆).
            (re.compile(r"(?<![★☆])(?=[★☆]{3,5}(?![★☆]))(★+)☆+(?![★☆])(?![ \t]*\d)"),
             lambda m: cardinal(str(len(m[1])), liang=True) + "星"),
            # An ID number's check letter after its cue (身份证号 11010519491231002X, 身份证后四位 002x) is the
            # letter X; it had been 倍.
            (re.compile(rf"{cue}\d+[xX](?![A-Za-z\d])"),
             lambda m: self._cued(m)[:-1] + "X"),
            # x after a number is 倍 (1.5x → 一点五倍, 2x → 两倍).
            (re.compile(r"(?<![A-Za-z\d.])(\d+(?:\.\d+)?)\s?[xX](?![A-Za-z\d])"), lambda m: m[1] + "倍"),
            # × before a lone number is 乘 (鸡蛋×2 → 鸡蛋乘二); the sign had been dropped. A Latin x is left alone
            # there: before a number it names models (宝马X5, 小米 X1).
            (re.compile(r"(?<![\d.])×\s?(?=\d)"), lambda m: "乘"),
            # A dash from a clock time to another after a word of the day (上午10:00-下午2:00, 周六 22:30 - 周日 08:00,
            # 12:00-次日凌晨2:00) is a range, 到; it had been dropped. Before other words (09:00-站会 10:30-评审) it is
            # a schedule's pause, left to the rules after.
            (re.compile(rf"(?<=\d[:：]\d\d)[ \t]*[-–][ \t]*(?=(?:{_DAY_WORD}){{1,2}}[ \t]*\d{{1,2}}[:：点])"),
             lambda m: "到"),
            # A dash between two words of the day as written (周一-周五 → 周一到周五, 上午-下午) is a range as ~ is;
            # set apart by spaces between other words a pause (五月天 - 天使, 还款日 - 今天), also where either is in
            # Latin letters, or after a title's closing bracket with or without spaces (Shape of You - Ed Sheeran,
            # 《孤勇者》- 陈奕迅, as media players show what is playing: they had run together); written tight it
            # joins them and is not said (中国-东盟). Not before a digit (COVID - 19, 温度 - 5).
            (re.compile(r"(?<=[\u3400-\u9fffA-Za-z》」』”\"])[ \t]*[-–][ \t]*(?=[《「『“\"\u3400-\u9fffA-Za-z])"),
             self._word_dash),
            # A dash between two values with the same word (3天-5天, 1月-3月, 3楼-5楼, 3F-5F, 第3天-第5天) is a range,
            # 到; the second value had been read as negative (三天负五天). Not in a sum (10个-3个=7个).
            (re.compile(rf"(?<![\d.\-{signs}])(?<![{signs}]\s)(\d+(?:\.\d+)?\s*([\u3400-\u9fff]{{1,2}}|F))\s*[-–]\s*"
                        r"(?=第?\d+(?:\.\d+)?\s*\2(?!\s*[=＝]))"),
             lambda m: m[1] + "到"),
            # A floor as malls and lifts write it (1F大厅 → 一楼大厅, 电梯到 3F); after a temperature word in its
            # clause, degrees Fahrenheit (室温 72F). B1 and B2 (basement levels) are said as written.
            (re.compile(r"(?<![A-Za-z\d.])(\d{1,3})\s?F(?![A-Za-z\d]|\s*电容)"), self._floor),
            # A span in letter units, as sleep and timer sensors write it (7h 32m, 1h 5m 20s, 3m 20s): m after hours or
            # before seconds is minutes, not metres (睡眠 7h 32m had been 七小时三十二米).
            # Days before hours (已运行 3d 4h 12m, an uptime sensor's) are 天; the d had been read as a letter.
            (re.compile(r"(?<![A-Za-z\d.])(\d+)\s*d\s*(?=\d+\s*h(?![A-Za-z]))"), lambda m: m[1] + "天"),
            (re.compile(r"(?<![A-Za-z\d.])(?:(\d+)\s*h\s*(\d+)\s*m(?:\s*(\d+)\s*s)?|(\d+)\s*m\s*(\d+)\s*s)(?![A-Za-z\d])"),
             lambda m: _letter_span(m[1], m[2], m[3]) if m[1] else _letter_span(None, m[4], m[5])),
            # UTC+8, GMT-5: an offset, 加/减 and its hours. Written with minutes (UTC+05:30, UTC-03:00) it is a span of
            # hours and minutes, said so (加五小时三十分, 减三小时): not a clock time, and its sign is said.
            (re.compile(r"(?<![A-Za-z])(UTC|GMT)\s*([+-])\s*(\d{1,2})(?:[:：]?(\d{2}))?(?![\d:])"), self._utc_offset),
            # A currency sign on the first value of a range stands for both (¥50-80 → 五十到八十元).
            (re.compile(rf"({money})\s*({_AMOUNT})([千万亿])?\s*[-~]\s*(?:{money})?\s*({_AMOUNT})([千万亿])?({words})?"),
             self._money_range),
            # A range after a date, a percent, a temperature or an amount; after one of the signs a ~ joins a signed
            # value too (-10℃~-2℃ → 零下十摄氏度到零下二摄氏度; a - there stays the value's own minus).
            (re.compile(rf"(?:(?<=[日号])\s*[-~]\s*(?=\d{{1,2}}[月日号]|[{DIGITS}]{{4}}年)"
                        r"|(?:(?<=[%‰])|(?<=°C)|(?<=\d[千万亿]))\s*(?:[-~]\s*(?=\d)|~\s*(?=-\d)))"),
             lambda m: "到"),
            # 40-60%: a percent sign written only at the end applies to both ends (百分之四十到百分之六十).
            (re.compile(rf"(?<![\d.A-Za-z\-])({_NUM})\s*[-~]\s*(?=-?{_NUM}\s*([%‰]))"), lambda m: m[1] + m[2] + "到"),
            # ~ or ≈ before a single value is 约 (~30分钟, ≈5kWh); after a value with its word it joins two (3天~5天).
            (re.compile(r"(?<![\d%‰°.])\s*([~≈])\s*(?=[-+]?[¥$€£]?\d)"), self._about),
            # A dash after a value that ends in letters (1080P-4K, 2.4GHz-5GHz, 3V-5V) is a range too, not a minus;
            # not inside a code, where letters or a dash come first (KFR-35GW-2).
            (re.compile(r"(?<![A-Za-z\d.\-])(\d+(?:\.\d+)?\s*[A-Za-z]{1,4})\s*[-~]\s*(?=\d)"), lambda m: m[1] + "到"),
            # Two m/d dates joined by a dash or ~ (12/14-12/20; — became - above) are a range of dates (十二月十四日到
            # 十二月二十日) when one of them can only be a date (day 13–31) or both lie in one month (12/1-12/5).
            (re.compile(r"(?<![\d./])(\d{1,2})/(\d{1,2})\s*[-~]\s*(\d{1,2})/(\d{1,2})(?![\d/])"), self._date_range),
            # Blood pressure (128/82 mmHg, 血压 120/80): 比 between the values, as it is said; not a fraction or date.
            (re.compile(rf"((?:{_alternation(d['blood_pressure_cues'])})[^\dA-Za-z，。！？,;；\n]{{0,4}}?)?(?<![\d./])(\d{{2,3}})\s*/\s*"
                        r"(\d{2,3})(?![\d/])(\s*mmHg)?"), self._blood_pressure),
            (re.compile(r"(?<!\d)(\d{1,2})月(\d{1,2})(?=[日号])"), self._md),
            # A slash set apart by spaces between two numbers (进度 3 / 10, 约 1 / 2 杯) is a fraction: no date is
            # written so. The numbers had been read together (一二, 约一两杯).
            (re.compile(r"(?<![\d./])(\d{1,3})[ \t]+/[ \t]+(\d{1,3})(?![\d/.])"), lambda m: f"{m[1]}/{m[2]}"),
            (re.compile(r"(?<![\d./])(\d{1,2})(/)(\d{1,2})(?![\d/])"), self._month_day),
            (re.compile(r"(?<![\d.\-A-Za-z])(\d{1,2})(-)(\d{1,2})(?![\d\-:]|\.\d)"), self._month_day),
            # An order or ticket number after # with dashes in it (#20261205-0012) is a code, as INC-2026-00123 is;
            # its dash had been read as a minus (…号负零零幺二).
            (re.compile(r"(?<![#\w])#\s?(\d{4,}(?:-\d+)+)(?![\d-])"), lambda m: _read_code(m[1])),
            # №3, No.3, 3#楼 (№ became # above); not a Markdown heading (## 1. …).
            (re.compile(r"(?:(?<!#)#|(?<![A-Za-z])N[oO]\.)\s?(\d+)(?![\d.])号?|(\d+)#(?!#)"),
             lambda m: (m[1] or m[2]) + "号"),
            # A Home Assistant entity id (light.living_room): its dot is 点 and its underscores are spaces, as it is
            # read out; the dot is no sentence's stop. Not before another dot part (update.example.com is a host).
            (re.compile(rf"(?<![A-Za-z\d_.])({_alternation(d['entity_domains'])})\.([a-z\d]+(?:_[a-z\d]+)*)"
                        r"(?![A-Za-z\d_]|\.[A-Za-z\d])"),
             lambda m: (m[1] + "点" + m[2]).replace("_", " ")),
            # Letters, a dot, digits (H.265, G.711, Vol.3): the dot is said 点 and the digits follow the rule for
            # digits joined to letters, rather than a pause that loses the number.
            (re.compile(r"(?<![A-Za-z])([A-Za-z]+)\.(\d+(?:\.\d+)*)(?![\d.])"), self._letter_dot),
            # A gate's number is a number at any length (登机口 D108, D108登机口), not a model number.
            # A second gate later in the clause is one too (登机口 D106 已变更为 D112).
            (re.compile(rf"((?:{gate})[^\dA-Za-z，。！？,;；\n]{{0,4}}?)([A-Z])(\d{{1,4}})(?![\d.A-Za-z])"
                        rf"(?:([^\dA-Za-z，。！？,;；\n]{{1,8}}?)([A-Z])(\d{{1,4}})(?![\d.A-Za-z]))?"
                        rf"|(?<![A-Za-z])()([A-Z])(\d{{1,4}})(?=\s*号?\s*(?:{gate}))"), self._gate),
            # Six digits after 股票/代码 or in brackets after a stock's name (贵州茅台(600519)) are a stock code.
            (re.compile(rf"(?:{_alternation(d['stock_cues'])})(?:是|为|：|:|\s)*\d{{6}}(?![\d.%‰])"
                        r"|(?<=[\u3400-\u9fff][(（])\s*\d{6}(?=\s*[)）])"), self._cued),
            # Six digits starting 0, 3 or 6 after a listed company's name (招商银行 600036) are its stock code.
            (re.compile(rf"((?:{_alternation(d['stock_name_endings'])})\s*)([036]\d{{5}})(?![\d.%‰,])"),
             self._stock_after_name),
            # Seat and car numbers drop a leading zero (05车03A → 五车三A), and keep their 二 (02车 → 二车).
            (re.compile(rf"(?<![\dA-Za-z.\-])(?<!\d[:：])0+(\d{{1,2}})(?=\s*(?:{seat})|[{d['seat_letters']}](?![A-Za-z]))"),
             self._seat),
            # A dashed model number's later groups are part of it (型号 XQG100-BD14 → XQG幺零零BD幺四). A draw's
            # 开奖号码 / 中奖号码 are numbers (开奖号码 12 15 22 had read its first as a code, 幺二，十五…).
            (re.compile(rf"{code_cue}[A-Z]{{0,3}}-?(?:\d[\d -]*\d|\d)"
                        r"(?:-[A-Za-z]+\d[A-Za-z\d]*)*"), self._cued),
            (re.compile(rf"(?<![\d.])\d{{3,}}(?:-\d+)*(?=\s*(?:{cue_after}))"), self._digit_string),
            (re.compile(r"(?<![\d.\-])(?:\+86[\s-]*)?(?:1[3-9]\d[\s-]?\d{4}[\s-]?\d{4}|0\d{2,3}(?:-\d{7,8}|[\s-]\d{3,4}[\s-]\d{4})"
                        r"|400-?\d{3}-?\d{4})(?![\d.])"), self._digit_string),
            # A landline with its area code in brackets ((010) 8532 6617, （021）6234 5678, (0755)8888-6666): digit by
            # digit with 1 as 幺, as without them; the brackets, spaces and dashes are not read.
            (re.compile(r"(?<![\d.\-])[(（]\s*(0\d{2,3})\s*[)）]\s*(\d{3,4}[\s-]?\d{4})(?![\d.\-])"),
             lambda m: _read_code(m[1] + m[2])),
            # Three or more dash-joined groups that are not a date or a phone number: a code (取件 3-4-1187).
            (re.compile(r"(?<![\d.\-])\d{1,4}(?:-\d{1,4}){2,}(?![\d.\-])"), self._digit_string),
            # Not an amount: ¥120, 120,000 and 120GB are money and quantities, not the ambulance line.
            (re.compile(rf"(?<![\d.A-Za-z{signs}])(?<![{signs}]\s)(?:{service})(?![\d.A-Za-z]|,\d)"), self._service),
            # A dash joining letters and digits makes a code (KFR-35GW, E-101, i9-13900K); the dash is not read.
            # Not a minus before a temperature after a name (GPU-5°C is 零下五摄氏度, read by the unit rule).
            (re.compile(r"(?<![A-Za-z\d.])[A-Za-z]{1,5}\d*(?:-[A-Za-z]*\d[A-Za-z\d]*)+(?![A-Za-z\d.]|\s*°)"),
             self._digit_string),
            # Letters joined to three or more digits are a model or chip number (ESP8266, rtx4090), not a reading
            # (CPU100%); one or two digits read as a number (ESP32, PS5), except in a train number (K1次, G7列车).
            (re.compile(rf"(?<![A-Za-z])[A-Za-z]+\d{{3,}}(?!\d|\.\d|\s*[%‰°])\+?|(?<![A-Za-z])[GDCKTZYSL]\d{{1,4}}(?=\s*(?:{train}))"),
             self._joined_model),
            # Two capitals and digits in a clause about flying are a flight number at any length (MU5航班, CA12).
            (re.compile(r"(?<![A-Za-z\d])[A-Z]{2}\d{1,4}(?![A-Za-z\d]|\.\d)"), self._flight),
            # A Latin word, a space and three or four digits: a model number too (RTX 4090, Xbox 360), unless the word
            # names a reading (AQI 156) or the number counts or measures something (Pro 256GB, Home Assistant 2025年).
            (re.compile(r"(?<![A-Za-z])([A-Za-z]{2,})\s+(\d{3,4})(?![A-Za-z\d]|\.\d|\s*[%‰°])"), self._spaced_model),
            # Video resolutions (1080P, 720p); 4K is a number of thousands and reads as one.
            (re.compile(r"(?<![\d.A-Za-z])\d{3,4}(?=[pP](?![A-Za-z]))"), self._digit_string),
            (re.compile(rf"((?:{ratio})(?:是|为)?\s*)(\d+)\s*[:：]\s*(\d+)"), self._ratio),
            (re.compile(rf"((?:{score})(?:是|为)?\s*)(\d{{1,3}})\s*[-–]\s*(\d{{1,3}})(?![\d.])"), self._ratio),
            (re.compile(rf"(?<![\d.\-–前第后])(\d{{1,3}})\s*[-–]\s*(\d{{1,3}})(?=(?:\s*[、,，]\s*\d{{1,3}}\s*[-–]\s*\d{{1,3}})*"
                        rf"\s*(?:{score_after}))"), self._ratio),
            # Between two names a falling pair that no date can be (湖人112-108勇士, 巴萨3-0皇马: a range rises, and
            # no month has day 0 or a 13th month) is a score too.
            (re.compile(r"(?<=[\u3400-\u9fff])[ \t]*(\d{1,3})[ \t]*[-–][ \t]*(\d{1,3})(?![\d.])[ \t]*"
                        r"(?=[\u3400-\u9fff])"), self._falling_score),
            # A Chinese clock with a zero-led minute reads the zero as a digital one does (9点05分 → 九点零五分); the
            # hour is left to the number rules (2点 → 两点).
            # "00分" is not read, as ":00" is not (9点00分 → 九点). Spaces as LLM replies write them (1 点 05 分) change
            # nothing (the zero had been lost: 一点五分).
            (re.compile(r"(?<![\d.])(\d{1,2})[ \t]*点[ \t]*0([0-9])[ \t]*分"),
             lambda m: m[1] + "点" + ("零" + cardinal(m[2]) + "分" if int(m[2]) else "")),
            # AM/PM after a range of two times is said once, before the first (8:00-8:30 AM → 上午八点到八点三十分; the
            # first had lost it: 八点到上午八点三十分) where both fall in that half of the day (11:00-1:00 PM does not).
            (re.compile(rf"(?<![\d:：.])(\d{{1,2}})([:：]\d{{2}})(\s*[-~–至]\s*)(\d{{1,2}})([:：]\d{{2}})"
                        rf"\s*({_alternation(d['am_pm'])})(?![A-Za-z\d{DIGITS}])"), _half_of_a_range),
            (re.compile(pair + r"(\d{1,2})[:：](\d{2})(?:[:：](\d{2}))?(?![\d:])"
                        rf"(?:\s*({_alternation(d['am_pm'])})(?![A-Za-z\d{DIGITS}十点]))?(\s*[-~至]\s*(?=\d{{1,2}}[:：]\d{{2}}))?"),
             self._clock),
            # An hour with AM/PM and no minutes (3PM, 8 pm, 12 PM) is a clock time as 8:00 PM is, not a number and
            # two letters; not PM2.5 or PM10 (a digit follows), a word that starts with them (5 AMD), nor a product
            # name's part after a Latin word (Shelly Plus 1PM).
            (re.compile(rf"(?<![\d.:：A-Za-z])(?<![A-Za-z]\s)(\d{{1,2}})\s*({_alternation(d['am_pm'])})(?![A-Za-z\d{DIGITS}])"),
             self._hour_half),
            # A bare ratio never starts on a digit of a Latin name (CO2：1350ppm is a reading after a colon).
            (re.compile(pair + r"(?<![A-Za-z])(\d+)[:：](\d+)(?![\d:])"), self._ratio),
            # A minus after a comparison (较昨日-12%, 环比 -3.5%) is a change, 减, not a negative (负; 比较冷 is no
            # comparison); + before a number is 加 (+5%; +86 was read above); ↑/↓ before one are 上升/下降.
            (re.compile(rf"((?<!比)(?:{change})[\u3400-\u9fff]{{0,4}}?[:：]?\s*)-(?=\s*(?:{money})?\d)"),
             lambda m: m[1] + "减"),
            (re.compile(rf"(?<![\d+])\+(?=\s*(?:{money})?\d)"), lambda m: "加"),
            (re.compile(rf"([{arrows}])\ufe0f?\s*(?=[-+加减]?\s*(?:{money})?\d)"), self._arrow_before_number),
            # An arrow elsewhere (价格↑, 气压 1013 hPa ↓) says its word too, unless the word before already says it
            # (气压下降↓); it had been dropped.
            (re.compile(rf"[ \t]*([{arrows}])\ufe0f?"), self._arrow),
            (re.compile(rf"\s*({compare})\s*(?=[-\d])"), lambda m: self.d["compare_symbols"][m[1]]),
            # ... and between two Latin words or a number and a word (x<y, A > B, 5 > x): the sign is said.
            (re.compile(rf"(?<=[A-Za-z\d])[ \t]*({compare})[ \t]*(?=[A-Za-z])"),
             lambda m: self.d["compare_symbols"][m[1]]),
            # ... but > between a Chinese word and another word is a menu path's step (设置 > 网络 > Wi-Fi), a pause;
            # the words had run together. Not the end of a bracket <提示>.
            (re.compile(r"(?<=[\u3400-\u9fff])[ \t]*>[ \t]*(?=[A-Za-z\u3400-\u9fff])"
                        r"|(?<=[A-Za-z])[ \t]*>[ \t]*(?=[\u3400-\u9fff])"),
             lambda m: m[0] if re.search(r"<[^<>\n]*$", m.string[: m.start()]) else "，"),
            # + between two words, written alike on both sides (Ctrl+C, 蓝牙 + WiFi, 牛奶+面包), is 加 as said; it had
            # been dropped. A name's trailing + (Disney+ 会员, A+ 级) stays unsaid.
            (re.compile(r"(?<=[A-Za-z\u3400-\u9fff])(?:\+|[ \t]+\+[ \t]+)(?=[A-Za-z\u3400-\u9fff])"), lambda m: "加"),
            # A count's + (99+ 条, 3万+, 10 km+: had been dropped after 万 or a unit) is 加, as a badge is read.
            (re.compile(r"(?<=\d)\+(?!\s*\d)|(?<=\d[千万亿])\+(?![\d+])"), lambda m: "加"),
            (re.compile(r"(?<=\d)([ \t]?[A-Za-z]{1,4})\+(?![+\dA-Za-z])"), lambda m: m[1] + "加"),
            (re.compile(rf"(-?)({money})\s*(-?)({_AMOUNT})([千万亿])?({words})?"), self._money),
            (re.compile(rf"(?<![\d.])(-?)({_NUM})\s*([%‰])"), self._percent),
            (re.compile(rf"(?<![\d.,])(-?)({_GROUPED}|\d+)(\.\d{{1,2}})元"), self._yuan),
            # A fraction; its top may be a decimal, as a rating out of a whole (4.8/5 → 五分之四点八; the slash had been
            # dropped: 四点八五).
            (re.compile(r"(?<![\d./])(\d+(?:\.\d+)?)/(\d+)(?![\d/]|\.\d)"), self._fraction),
            # Generations (80后, 05后, 20后): the decade's digits, as a year is read.
            (re.compile(r"(?<![\d.])([5-9][05]|[01][05]|[02]0)(?=后)"), lambda m: digits(m[1])),
            (re.compile(r"(?<![\d.])((?:19|20)\d\d)\s*[-~]\s*((?:19|20)\d\d)(?![\d.])"), self._year_range),
            (re.compile(r"(?<![\d.])(\d{1,3})\s*[-~]\s*(\d{1,3})(?=年)"), self._short_range_of_years),
            (re.compile(rf"(?<![\d.])(-?)({_NUM})\s*[-~～]\s*(?=-?\d)"), self._range),
            (re.compile(r"(?<!\d)(\d{2,4})(?=年)"), self._year),
            (re.compile(rf"(?<=\d)\s*([{math}])\s*(?=[-\d])"), self._math),
            # = between words is 等于 too (温度=25℃, x = 5): it says what the two sides are; a run of them (=====) is a
            # divider and => an arrow, not said.
            (re.compile(r"(?<![=<>!])[ \t]*=[ \t]*(?![=>])"), lambda m: str(self.d["math_symbols"]["="])),
            (re.compile(rf"(?<![\d.])(-?)((?:{_GROUPED}|\d+)(?:\.\d+)?)\s*({unit})(?![A-Za-z])"), self._unit),
            (re.compile(rf"(?<=[\u3400-\u9fff])\s*/\s*(?=(?:{per}))()"), self._per),
            # A price without its currency word before a span (房租 3500/月, 3.5k/月 → 三千五百每月): 每, as after 元.
            (re.compile(r"(?<=\d\d)\s*/\s*(?=(?:月|年|天|周|晚|小时|季度|学期)(?![\u3400-\u9fff\d]))"), lambda m: "每"),
            (re.compile(rf"(?<=[\u3400-\u9fff])\s*/\s*({unit})(?![A-Za-z])"), self._per),
            # A slash set apart by a space between words (制冷 / 26℃ / 自动风, 客厅 / 卧室) separates a list's items: a
            # pause (they had run together); written tight (开/关) it stays unsaid.
            (re.compile(r"(?<=[\u3400-\u9fff])(?:[ \t]+/[ \t]*|[ \t]*/[ \t]+)(?=[\u3400-\u9fff\d])"), lambda m: "，"),
            (re.compile(rf"(?<![\d.])(-?)({_GROUPED}|\d+)(\.\d+)?"), self._number),
            # Between two capitals or sizes (A~C 区, S～XL) ~ is a range, 到, as between days.
            (re.compile(r"(?<![A-Za-z])([A-Z]{1,3})[ \t]*~[ \t]*(?=[A-Z]{1,3}(?![A-Za-z]))"), lambda m: m[1] + "到"),
            (re.compile(r"[ \t]*~+[ \t]*"), self._tilde),
            # Digits no rule above read (after a stray dot: 约.5) are still said: nothing the user wrote is dropped.
            (re.compile(r"\d+"), lambda m: digits(m[0])),
        ]

    # --- readers -------------------------------------------------------------------------------
    def _floor(self, m: re.Match[str]) -> str:
        """N楼; in a clause about a seat (座位 12F, 8车15F: a train's or a plane's) left for the seat rules, and after
        a temperature word N华氏度."""
        clause = m.string[_clause_start(m.string, m.start()) : m.start()]
        if self.seat_clause.search(clause):
            return m[0]
        return m[1] + ("华氏度" if re.search("[温度]", clause) else "楼")

    def _times(self, m: re.Match[str]) -> str:
        """7×24小时 → 七乘24, the number rules reading the last; a resolution (1920×1080: two numbers of three or four
        digits that measure nothing) digit by digit, as 1080P is. A letter after the last number that is no unit makes
        it a name or a hex code (0x1F), left as written."""
        after = m.string[m.end() :]
        if re.match(r"[A-Za-z]", after) and not self.unit_re.match(after):
            return m[0]
        numbers = [m[1], *re.split(r"\s*[×xX]\s*", m[2].strip())[1:]]
        if len(numbers) == 2 and all(re.fullmatch(r"\d{3,4}", n) for n in numbers) and not self._counts(after):
            return "乘".join(digits(n) for n in numbers)
        # The last number is left to the rules that see what follows it (7×2小时 → 七乘两小时; 120x60cm is no 120 line).
        return "".join(decimal(n) + "乘" for n in numbers[:-1]) + numbers[-1]

    def _utc_offset(self, m: re.Match[str]) -> str:
        """UTC+8 → UTC加八; UTC+05:30 → UTC加五小时三十分, UTC-03:00 → UTC减三小时: written as hours and minutes, the
        offset is a span of them (两 for 2, a zero part not said), as a countdown is."""
        zone, sign, hours, minutes = m.groups()
        offset = cardinal(hours) if minutes is None else _span((hours, minutes), ("小时", "分")) or "零"
        return zone + ("加" if sign == "+" else "减") + offset

    def _gate(self, m: re.Match[str]) -> str:
        """登机口 D108 → 登机口D一百零八: a gate (one letter; two are a flight, MU2156登机口) is named by its number,
        said as one (B200 → B二百, not 两百)."""
        if not m[2]:
            return m[7] + m[8] + cardinal(m[9], big_liang=False)
        second = m[4] + m[5] + cardinal(m[6], big_liang=False) if m[5] else ""
        return m[1] + m[2] + cardinal(m[3], big_liang=False) + second

    def _seat(self, m: re.Match[str]) -> str:
        """05车 → 5车, and a seat's 03A → 3A after a car or seat word; the number rules then read it (keeping 二).
        A letter alone (03A in a room code) is no seat."""
        after = m.string[m.end() :]
        if after[:1].isalpha() and after[:1].isascii() and not self.seat_before.search(m.string[: m.start()]):
            return m[0]
        return m[1]

    def _tilde(self, m: re.Match[str]) -> str:
        """~ left between two words is a range, 到, only where both name days, dates, times or values (周一~周五);
        between other words it is a pause (早安～今天, 好哒~马上到: a reader stops there). A trailing one is
        decoration: 。 at the end of the text, nothing elsewhere (before a line break, which is the pause)."""
        before, after = m.string[: m.start()], m.string[m.end() :]
        if re.search(r"[\u3400-\u9fff]$", before) and re.match(r"[\u3400-\u9fff]", after):
            return "到" if self._ranged(m) else "，"
        if re.search(r"[A-Za-z]$", before) and re.match(r"[\u3400-\u9fff]", after):
            return "，"  # Hi～你好: a greeting's pause
        return "" if re.search(r"[\w\u3400-\u9fff]", after) else "。"

    def _arrow_before_number(self, m: re.Match[str]) -> str:
        """↑3℃ → 上升三摄氏度; before a transfer rate (↓ 12.3 Mbps) its direction, 下载 or 上传: not again where the
        words before say it (下载速度 ↓95 Mbps), after a pause where it follows the other direction's reading."""
        if not self.transfer_after.match(m.string, m.end()):
            return str(self.d["change_arrows"][m[1]])
        word, before = str(self.d["transfer_arrows"][m[1]]), m.string[: m.start()].rstrip()
        if word in before[-6:]:
            return ""
        return ("，" if re.search(r"[A-Za-z\d]$", before) else "") + word

    def _arrow(self, m: re.Match[str]) -> str:
        """An arrow set apart after a reading is its own clause (1013 hPa ↓ → 一千零一十三百帕，下降)."""
        word = str(self.d["change_arrows"][m[1]])
        before = m.string[: m.start()]
        # Said already, in its words or others (价格上涨↑, 偏高↑, 向上滑动 ↑, ↓ 跌破): not again.
        near = before.rstrip()[-4:] + "|" + m.string[m.end() : m.end() + 4].lstrip()
        if any(w in near for w in self.d["change_arrow_words"][word]):
            return ""
        return ("，" if before.strip() and m[0][0] in " \t" else "") + word

    @staticmethod
    def _thousands(m: re.Match[str]) -> str:
        """¥1.2w, 月薪 15k-20k, 15-20k (the low end takes the high end's k), $1.2M: 千, 万 and 亿 as the number rules
        read them."""
        cue, low, low_k, dash, high, high_k = m.groups()
        k = low_k or high_k
        if not k:
            return m[0]
        return cue + _shorthand(low + k) + (dash + (_shorthand(high + high_k) if high_k else high) if dash else "")

    def _compass(self, m: re.Match[str]) -> str:
        """风向 + the point's words, then its bearing; a pause after where a space set the next words apart."""
        bearing = f"，{m[2]}度" if m[2] else ""
        return m[1] + str(self.d["compass_points"][m[3]]) + bearing + _pause_if_spaced(m)

    def _missing_state(self, m: re.Match[str]) -> str:
        """The state's Chinese word where Chinese is next to it (a colon or spaces between), else as written."""
        before, after = m.string[: m.start()].rstrip(" \t:："), m.string[m.end() :].lstrip()
        if (not _HAN.match(before[-1:]) and not _HAN.match(after[:1])) or re.match("[A-Za-z]", after):
            return m[0]  # not in a Chinese sentence, or part of an English phrase (unknown error)
        return str(self.d["missing_states"][m[1]])

    def _coordinate(self, m: re.Match[str]) -> str:
        said, value, minutes, seconds, side = m.groups()
        word = {"N": "北纬", "S": "南纬", "E": "东经", "W": "西经"}[side]
        clause = m.string[_clause_start(m.string, m.start()) : m.start()]
        near = m.string[max(0, m.start() - 24) : m.start()] + " " + m.string[m.end() : m.end() + 24]
        pair = re.search(rf"\d°(?:{_ARC})?[NSEW]", near)
        in_range = float(value) <= (90 if side in "NS" else 180)
        if not in_range or not (said or pair or self.coordinate_cue.search(clause)):
            return m[0]
        return word + value + "度" + (_minutes_seconds(minutes, seconds) if minutes else "")

    def _nth_of(self, m: re.Match[str]) -> str:
        """第2/5步: the second step of five, where the word counts steps of a whole (`steps_of_whole`); else two
        ordinals (第3/4季度 → 第三，四季度)."""
        n, of, word = m.groups()
        if word in self.d["steps_of_whole"]:
            return f"第{n}{word}，共{of}"
        return f"第{n}，{of}"

    def _estimate(self, m: re.Match[str]) -> str:
        """3、4 个人 → 三四个人: only neighbours (1、6 is a list), before a word that counts, not one that names."""
        a, b = m.groups()
        before, after = m.string[: m.start()], m.string[m.end() :].lstrip()
        if int(b) != int(a) + 1 or _after_ordinal(before) or self.ordinal_re.match(after) or not self._counts(after):
            return m[0]
        return cardinal(a, liang=True) + cardinal(b, liang=True)

    def _word_dash(self, m: re.Match[str]) -> str:
        """周一-周五, 上午-下午, 今天-明天: two words of one kind make a range (星期天-下午茶 is no range); else a
        pause where spaces or a title's closing bracket set the dash apart, nothing where it is written tight."""
        for before, after in _DAY_KIND_ENDS:
            if before.search(m.string, 0, m.start()) and after.match(m.string, m.end()):
                return "到"
        spaced = m[0][0] in " \t" and m[0][-1] in " \t"
        return "，" if spaced or m.string[m.start() - 1] in "》」』”\"" else m[0]

    def _ranged(self, m: re.Match[str]) -> bool:
        """Whether the words either side of a ~ both name days, dates, times or values (`tilde_range_ends`)."""
        before = self.tilde_range_before.search(m.string, 0, m.start())
        return bool(before and self.tilde_range_after.match(m.string, m.end()))

    def _money_range(self, m: re.Match[str]) -> str:
        """¥50-80: the sign on the first value stands for both ends (五十到八十元); ¥ decimals in 元/角/分 at each end.
        A currency word written after the range as well (¥50~80元) is said once (``_currency``)."""
        symbol, low, low_big, high, big, written = m.groups()
        name, unit = self._currency(symbol, written)
        low, high = low.replace(",", ""), high.replace(",", "")
        # 元/角/分 at both ends, unless one end has three decimals (¥0.5-0.617): then both read with 点.
        jiao_fen = "." in low + high and all(_jiao_fen(end) is not False for end in (low, high))
        if unit in self.d["jiao_fen_units"] and jiao_fen and not big and not low_big:
            return name + _yuan(low) + "到" + _yuan(high)
        # The low end's own 千 or 万 is said (¥5千-1万); without one it shares the high end's (¥5-8万 → 五到八万元).
        return name + decimal(low, liang=True) + (low_big or "") + "到" + decimal(high, liang=True) + (big or "") + unit

    def _currency(self, symbol: str, written: str | None) -> tuple[str, str]:
        """The words said before and after an amount with a currency sign. A currency word written after the amount as
        well is said once: where the sign's word ends in it (美元 after US$, 元 after HK$'s 港元) it is that word; else
        the sign's word names the currency before the amount and the written word is its unit (NT$250元 →
        新台币两百五十元, as such prices are said, where 两百五十新台币元 says two units)."""
        unit = str(self.d["currency_prefix"][symbol])
        if written and not unit.endswith(written):
            return unit, written
        return "", unit

    def _ymd(self, m: re.Match[str]) -> str:
        y, mo, day = m.groups()
        return _date(mo, day, y)

    def _blood_pressure(self, m: re.Match[str]) -> str:
        """血压 128/82, 128/82 mmHg: the two pressures are said with 比 (一百二十八比八十二毫米汞柱); without a cue
        word or mmHg a slash pair is left to the fraction and date rules."""
        cue, high, low, mmhg = m.groups()
        if not (cue or mmhg):
            return m[0]
        unit = str(self.units["mmHg"]) if mmhg else ""
        return (cue or "") + cardinal(high) + "比" + cardinal(low) + unit

    def _date_range(self, m: re.Match[str]) -> str:
        """12/14-12/20 → 十二月十四日到十二月二十日: both ends valid m/d, and one day 13–31 or both in one month with
        the days rising (12/1-12/5: a pair of fractions with one denominator and rising numerators is no range
        anyone writes); else left to the rules for a single m/d (fractions) and for ranges."""
        (m1, d1), (m2, d2) = (int(m[1]), int(m[2])), (int(m[3]), int(m[4]))
        valid = all(1 <= mo <= 12 and 1 <= day <= 31 for mo, day in ((m1, d1), (m2, d2)))
        if not valid or (max(d1, d2) < 13 and not (m1 == m2 and d1 < d2)):
            return m[0]
        return f"{_date(m[1], m[2])}到{_date(m[3], m[4])}"

    def _md(self, m: re.Match[str]) -> str:
        return f"{cardinal(m[1])}月{cardinal(m[2])}"

    def _plate(self, m: re.Match[str]) -> str:
        """苏E·6K3M9: no pause after the province letter, the rest as a code."""
        return m[1] + m[2] + _read_code(m[3])

    def _address(self, m: re.Match[str]) -> str:
        """https://homeassistant.local:8123 → https冒号双斜杠homeassistant点local冒号八幺二三: letters as words,
        digits as a code, each symbol by its name; nothing of it is left unsaid."""
        symbols = self.address_symbols
        parts = re.findall("://|[A-Za-z]+|\\d+|.", m[0])
        said = [_read_code(p) if p.isdigit() else p if p.isascii() and p.isalpha() else symbols.get(p, p)
                for p in parts]
        return "".join(said)

    def _ip(self, m: re.Match[str]) -> str:
        """192.168.1.10:8123: each part a code, and a port after 冒号 (not a pause: it belongs to the address)."""
        address, port = m.groups()
        return "点".join(_read_code(part) for part in address.split(".")) + ("冒号" + _read_code(port) if port else "")

    def _version(self, m: re.Match[str]) -> str:
        """v3.2.1, 2025.11 版本: each part a number (a four-digit year part digit by digit); else untouched."""
        parts = m[0].split(".")
        before, after = m.string[: m.start()], m.string[m.end() :]
        cue = self._version_cue(before, after)
        # The far end of a change from a version is one too (Frigate 0.15 → 0.16: → became 到 above).
        prev = _VERSION_BEFORE.search(before)
        cue = cue or bool(prev and self._version_cue(before[: prev.start()], before[prev.end(1) :]))
        if len(parts) == 2 and not cue:
            return m[0]
        if len(parts) == 3 and len(parts[0]) == 4 and not (cue or re.search(r"[A-Za-z]\s*$", before)
                                                           or self.update_before.search(before)
                                                           or self._version_after_colon(parts, before)):
            return m[0]  # 2025.06.18: a date
        return "点".join(digits(p) if len(p) == 4 or (len(p) > 1 and p[0] == "0") else cardinal(p) for p in parts)

    def _version_after_colon(self, parts: list[str], before: str) -> bool:
        """可用：2026.12.0: a bare year.month.patch after a colon is a release, as HA numbers them; not after a word
        of dates (纪念日：2027.05.16), nor where a zero-padded month or day shows a written date."""
        if not self.colon_before.search(before) or self.date_colon_before.search(before):
            return False
        return not any(len(p) > 1 and p[0] == "0" for p in parts[1:])

    def _version_cue(self, before: str, after: str) -> bool:
        """A version word before a dotted number or 版 after it; or a name it is joined to or follows after a space
        (HA2024.12, iOS 17.10, Home Assistant 2024.12), unless a unit or % makes it a reading (GPU85.5°C)."""
        if self.version_before.search(before) or _VERSION_AFTER.match(after):
            return True
        named = re.search(r"[A-Za-z]\s?$", before)
        return bool(named) and not (self.unit_re.match(after) or _READING_AFTER.match(after))

    def _stock_after_name(self, m: re.Match[str]) -> str:
        """招商银行 600036: six digits after a listed company's name are its stock code, digit by digit; an amount
        (工商银行 300000 元, 集团 600000 人) is left to the number rules."""
        if self._counts(m.string[m.end() :]):
            return m[0]
        return m[1] + _read_code(m[2])

    def _month_day(self, m: re.Match[str]) -> str:
        """5/20 and 12-25 are dates when they can only be one (day 13–31), and so are 12/08 and 12/8 (no fraction is
        written with a zero before a digit, nor top-heavy in a sentence); 1/5 stays a fraction, and a dash pair that
        counts or measures something (10-15分钟, 12-25℃, 第1-15集) a range."""
        month, sep, day = m.groups()
        before, after = m.string[: m.start()], m.string[m.end() :]
        if sep == "-" and 1 <= int(month) <= 12 and 1 <= int(day) <= 31 and self._dated(after, before):
            return f"{cardinal(month)}月{cardinal(day)}"
        if sep == "-" and (self._counts(after) or _after_ordinal(before)):
            return m[0]
        # 12/08: zero-padded; 12/8: no everyday fraction is written top-heavy (a ratio is: 比例 3/2).
        top_heavy = int(day) < int(month) and not self.ratio_before.search(before)
        days = range(1, 32) if sep == "/" and ("0" in (month[0], day[0]) or top_heavy) else range(13, 32)
        if 1 <= int(month) <= 12 and int(day) in days and not _FRACTION_AFTER.match(after):
            return _date(month, day)
        # 12-05 stays a range, of two numbers: the zero is a date's padding, not a code's digit (十二到五).
        return f"{int(month)}-{int(day)}" if sep == "-" else m[0]

    def _dated(self, after: str, before: str) -> bool:
        """12-05日: 日 or 号 (not 号楼, 号线) right after a dash pair makes it a date, unless a word of duration shows
        a count of days (3-5日内送达) or 第 an ordinal range."""
        word = self.ordinal_re.match(after)
        if word is None or word[0].strip() not in ("日", "号") or _after_ordinal(before):
            return False
        return not self.year_after.match(after[word.end() :])

    def _quarter_year(self, m: re.Match[str]) -> str:
        """Q4 2026 → 二零二六年Q四, unless the number counts or measures (H2 2000 米 is two thousand metres)."""
        if self._counts(m.string[m.end() :].lstrip()):
            return m[0]
        return digits(m[2]) + "年" + m[1]

    def _counts(self, after: str) -> bool:
        """Whether a measure word, an ordinal word, a unit or 万/亿/多/年 right after a number shows it counts or
        measures something rather than naming it (120个 is no dialled number, 10-15分钟 no date)."""
        counts = (self.liang_re, self.ordinal_re, self.unit_re, _BIG_OR_MORE, _READING_AFTER)
        # Longest word wins: 家里 or 下午 after a number is no measure word 家 or 下 (12-20 家里没人 is a date).
        return not self.not_measure.match(after) and any(r.match(after) for r in counts)

    def _about(self, m: re.Match[str]) -> str:
        """~ and ≈ before a single value say it is approximate (约); written after a value and its word (3天~5天,
        1度≈0.5元) they join two values, as a range's 到 and maths' 约等于 do. After a bare number and a space
        (气温 5 ~ 13℃, as replies space it) it is left to the range rules: it had been 约 (五约十三摄氏度)."""
        before = m.string[: m.start()]
        if re.search(r"[\d%‰°.][ \t]+$", before):
            return m[0]
        if re.search(r"\d[\u3400-\u9fffA-Za-z]{1,3}\s*$", before):
            return "到" if m[1] == "~" else str(self.d["math_symbols"][m[1]])
        return "约"

    def _flight(self, m: re.Match[str]) -> str:
        """MU5, CA12: a flight number only in a clause about flying; elsewhere (PS5) the name rules read it."""
        head = _clause_start(m.string, m.start())
        tail = _CLAUSE_END.search(m.string, m.end())
        if self.flight_cue.search(m.string, head, tail.start() if tail else len(m.string)):
            return _read_code(m[0])
        return m[0]

    def _spaced_model(self, m: re.Match[str]) -> str:
        """RTX 4090 → RTX四零九零; a reading's name (AQI 156) or a count or size (Pro 256GB) is left to later rules."""
        if self.reading_name.fullmatch(m[1]) or self._counts(m.string[m.end() :]):
            return m[0]
        return m[1] + _read_code(m[2])

    def _joined_model(self, m: re.Match[str]) -> str:
        """ESP8266, rtx4090, G7次: a model, chip or train number, digit by digit; a reading's name joined to its value
        (AQI156, BPM120) is left to the number rules, as after a space."""
        name = re.match(r"[A-Za-z]+", m[0])
        if name and self.reading_name.fullmatch(name[0]):
            return m[0]
        return self._digit_string(m)

    def _per(self, m: re.Match[str]) -> str:
        """A "/" reads 每 only after a measure word, unit or currency (元/度, 次/分); between two other words
        (早/晚高峰) it is left to be dropped, so the words join as they are said (早晚高峰)."""
        if not self.measure_before.search(m.string[: m.start()]):
            return m[0]
        return "每" + (str(self.units[m[1]]) if m[1] else "")

    def _letter_dot(self, m: re.Match[str]) -> str:
        """H.265 → H点二六五, Vol.3 → Vol点三: nothing is dropped, and each part reads as digits joined to letters do
        (three or more, or a leading zero, one by one like a model number; fewer as a number)."""
        parts = m[2].split(".")
        return m[1] + "点" + "点".join(_read_code(p) if len(p) >= 3 or p[0] == "0" else cardinal(p) for p in parts)

    def _spaced_numbers(self, m: re.Match[str]) -> str:
        """Spaced two-digit groups: a list (``_number_list``), unless a code's cue word comes just before unpadded
        ones (号码 12 34 56, 验证码 12 34 56): then the cue's rule reads them as one code, as it reads 验证码 123 456
        (幺二三四五六). As a list the cue had taken the first group alone (号码幺二，三十四，五十六)."""
        padded = any(group.startswith("0") for group in m[0].split())
        if not padded and self.cue_end.search(m.string[max(0, m.start() - 16) : m.start()]):
            return m[0]
        return _number_list(m)

    def _cued(self, m: re.Match[str]) -> str:
        """型号 KFR-72GW, 订单号 2026…: the code after its cue word, digit by digit. An hour and a colon after it
        (航班 8:00 起飞, 航班 18:40) are a clock time, left to the clock rule, not the flight's number."""
        text, after = m[0], m.string[m.end() :]
        if re.search(r"(?<![\dA-Z])\d{1,2}$", text) and re.match(r"[:：]\d{2}(?!\d)", after):
            return text
        if re.fullmatch(r"\D*\d+", text) and self.liang_re.match(after.lstrip()) and not self.not_measure.match(after):
            return text  # a count after the cue (骚扰电话 1010 次), left to the number rules
        start = re.search(r"[A-Z]*\d", text)
        assert start is not None
        return text[: start.start()] + _read_code(text[start.start() :])

    def _digit_string(self, m: re.Match[str]) -> str:
        """A code digit by digit; a dash between two letters in it is a space, as between two Latin words
        (IPC-G42 → IPC G四二), where any other dash is not read (KFR-35GW → KFR三五GW)."""
        parts = re.split(r"(?<=[A-Za-z])-(?=[A-Za-z])", m[0].replace("+", "加"))
        return " ".join(_read_code(part) for part in parts)

    def _service(self, m: re.Match[str]) -> str:
        """110, 12345 …: dialled numbers, unless a measure word shows they count something (120个) or a reading's name
        before them that they are its value (心率 120, BPM 120)."""
        if self._counts(m.string[m.end() :]) or self.reading_before.search(m.string[: m.start()]):
            return m[0]
        return _read_code(m[0])

    def _falling_score(self, m: re.Match[str]) -> str:
        """A score, where nothing else the pair could be fits: a rising pair is a range, a month and day a date, a
        pair before its word (25-18度, 20-10分钟) a range of that reading, as the rules after it read them."""
        a, b = int(m[1]), int(m[2])
        after = m.string[m.end() :]
        if a <= b or (a <= 12 and 1 <= b <= 31) or self._counts(after) or after.startswith(("度", "倍", "岁")):
            return m[0]
        return f"{cardinal(m[1])}比{cardinal(m[2])}"

    def _ratio(self, m: re.Match[str]) -> str:
        *cue, a, b = m.groups()
        return f"{cue[0] if cue else ''}{cardinal(a)}比{cardinal(b)}"

    def _clock(self, m: re.Match[str]) -> str:
        h, mi, s, half, until = m.groups()
        # PM10：41μg/m³, CO2：680: digits joined to a Latin name are the name's, and a reading follows the colon, even
        # where the two could make a time. Not the T of an ISO timestamp (…日T10:30), which is no name.
        name = re.search(r"(?<![A-Za-z])[A-Za-z]+$", m.string[: m.start()])
        if name and name[0] not in ("T", "t"):
            return m[0]
        if int(mi) > 59 or (s and int(s) > 59):
            return f"{cardinal(h)}比{cardinal(mi)}" + (f"比{cardinal(s)}" if s else "")
        # A countdown's first part may be minutes past 24 (还剩 45:20 → 四十五分二十秒): no clock, and no ratio either.
        if self.countdown_before.search(m.string[: m.start()]):
            return _countdown(h, mi, s) + (half or "")
        # Whole minutes past 24 (番茄钟 25:00, 定时器：90:00 后) are a timer's minutes and seconds: no clock, and no
        # ratio is written with :00 (二十五比零 had been said).
        if int(h) > 24 and mi == "00" and not s:
            return _countdown(h, mi) + (half or "")
        if int(h) > 24:
            return f"{cardinal(h)}比{cardinal(mi)}" + (f"比{cardinal(s)}" if s else "")
        out = self._half_of_day(h, half, m.string[: m.start()]) + cardinal(h, liang=True) + "点"
        s = s if s and int(s) else None  # 09:00:00 is 九点
        if int(mi) or s:
            out += ("零" if mi.startswith("0") and int(mi) else "") + cardinal(mi) + "分"
        if s:
            out += ("零" if s.startswith("0") and int(s) else "") + cardinal(s) + "秒"
        return out + (("至" if "至" in until else "到") if until else "")

    def _half_of_day(self, hour: str, half: str | None, before: str) -> str:
        """上午/下午 for AM/PM after a clock time, or the hour's own part of the day (12:15 PM is noon, 11 PM the
        evening, 1 AM before dawn); nothing where the text already names the part of the day (晚上8:00 pm, 今晚 9 pm:
        said once)."""
        if not half or self.day_part_before.search(before):
            return ""
        said = self.d["am_pm"][half]
        return str(self.d["am_pm_by_hour"][said].get(int(hour), said))

    def _hour_half(self, m: re.Match[str]) -> str:
        hour, half = m.groups()
        if not 1 <= int(hour) <= 12:
            return m[0]
        return self._half_of_day(hour, half, m.string[: m.start()]) + cardinal(hour, liang=True) + "点"

    def _money(self, m: re.Match[str]) -> str:
        sign, symbol, inner_sign, amount, big, written = m.groups()
        minus = "负" if sign or inner_sign else ""  # -¥35 and ¥-35 are both 负
        name, unit = self._currency(symbol, written)
        return name + minus + self._amount(amount, big, unit)

    def _amount(self, amount: str, big: str | None, unit: str) -> str:
        """An amount and its currency word: in 元/角/分 where the word takes them and the decimals allow (¥3.50 →
        三元五角), else with 点 (€12.5 → 十二点五欧元)."""
        amount = amount.replace(",", "")
        if unit in self.d["jiao_fen_units"] and _jiao_fen(amount) and not big:
            return _yuan(amount)
        return decimal(amount, liang=True) + (big or "") + unit

    def _yuan(self, m: re.Match[str]) -> str:
        return ("负" if m[1] else "") + _yuan(m[2].replace(",", "") + m[3])

    def _percent(self, m: re.Match[str]) -> str:
        sign, number, mark = m.groups()
        special = self.d["percent_special"].get(number + mark)
        if special and not sign:
            return str(special)
        return ("负" if sign else "") + ("百分之" if mark == "%" else "千分之") + decimal(number)

    def _fraction(self, m: re.Match[str]) -> str:
        return f"{cardinal(m[2])}分之{decimal(m[1])}"

    @staticmethod
    def _year_last(m: re.Match[str]) -> str:
        first, sep, second, year = m.groups()
        month, day = (first, second) if sep == "/" else (second, first)
        if int(month) > 12:
            month, day = day, month
        if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
            return m[0]
        return _date(month, day, year)

    def _english_date(self, name: str, day: str, year: str | None) -> str:
        if not 1 <= int(day) <= 31:
            return f"{name} {day}" + (f" {year}" if year else "")
        return _date(str(self.d["english_months"][name]), day, year)

    @staticmethod
    def _festival(m: re.Match[str]) -> str:
        month, day = m.groups()
        return "双" + cardinal(month) if month == day and month in ("11", "12") else cardinal(month) + digits(day)

    def _coded_money(self, m: re.Match[str]) -> str:
        minus = "负" if m["minus"] or m.groupdict().get("sign") else ""  # -USD 5 and USD -5 are both 负
        return minus + self._amount(m["amount"], m["big"], str(self.d["currency_codes"][m["code"]]))

    def _year(self, m: re.Match[str]) -> str:
        number = m[1]
        counts = self._counts_years(number, m.string[: m.start()], m.string[m.end() + 1 :])
        return cardinal(number, liang=True) if counts else digits(number)

    def _counts_years(self, number: str, before: str, after: str) -> bool:
        """Whether a 2-4 digit number before 年 (``after`` is what follows 年) is a count of years, not a year."""
        is_count = bool(self.year_before.search(before) or self.year_after.match(after))
        if len(number) < 4:
            is_count = is_count or bool(self.short_year_after.match(after))
        if len(number) == 3:
            is_count = is_count or not before.endswith(("公元", "公元前"))
        elif len(number) == 2 and not number.startswith("0"):
            is_count = is_count or (int(number) < self.d["short_year_min"] and not self.year_context.search(before))
        return is_count

    def _short_range_of_years(self, m: re.Match[str]) -> str:
        """10~12年 is a span of years (十到十二年): its end must not read as a year (一二年) just because a range's 到
        now precedes it. Two-digit years show themselves by a leading zero or a start past the end (98-02年), or by
        reading as years alone (90-95年 → 九零到九五年, as 95年 → 九五年; ``_counts_years``)."""
        start, end = m.groups()
        before, after = m.string[: m.start()], m.string[m.end() :]
        zero_led = any(len(n) > 1 and n[0] == "0" for n in (start, end))
        # 间 after a range's 年 is the range's own "between" (在90-95年间), so it says nothing of a count, as it does
        # after one number (20年间).
        after_year = _BETWEEN.sub("", after[1:], count=1)
        years = all(len(n) > 1 and not self._counts_years(n, before, after_year) for n in (start, end))
        if zero_led or int(start) > int(end) or years:
            return digits(start) + "到" + digits(end)
        return self._read_number(before, start, after) + "到" + self._read_number(before, end, after)

    def _range(self, m: re.Match[str]) -> str:
        """The left end of 3-5天 or 2020-2024年 reads the way the right end will."""
        sign, number = m.groups()
        after = m.string[m.end() :]
        if len(number) == 4 and re.match(r"\d{4}年", after):
            return digits(number) + "到"
        return self._sign(sign, number, after) + self._read_number("", number, "到" + after) + "到"

    def _year_range(self, m: re.Match[str]) -> str:
        """2025-2026赛季: two years, unless a measure word shows they are amounts (2000-2500元)."""
        after = m.string[m.end() :]
        # 年 takes 两 after a count, but two 19xx/20xx numbers before it are years (2019-2021年间).
        if not after.startswith("年") and (self.liang_re.match(after) or self.unit_re.match(after)):
            return m[0]
        return digits(m[1]) + "到" + digits(m[2])

    def _sign(self, sign: str, number: str, after: str) -> str:
        """零下 for temperatures, 负 otherwise; nothing before a zero (-0.0℃, as a sensor rounds it: 零点零摄氏度)."""
        if not sign or not number.strip("0.,"):
            return ""
        unit = re.match(rf"[-~到\d.\s]*({_alternation(self.units)})?", after)
        reading = self.units.get(unit[1], "") if unit and unit[1] else after.lstrip("-~到0123456789. ")
        return "零下" if self._is_temperature(reading) else "负"

    def _is_temperature(self, reading: str) -> bool:
        return reading.startswith(tuple(self.temperature))

    def _liang_unit(self, unit: str) -> bool:
        """A bare 2 before a unit of measure is 两 (2kg → 两千克, 2GB → 两GB); before a temperature it names a point on
        a scale and stays 二 (二摄氏度)."""
        return not self._is_temperature(str(self.units[unit]))

    def _takes_liang(self, after: str) -> bool:
        """Whether a bare 2 before ``after`` is 两: a measure word, or a unit of measure, also at the far end of a range
        (2-3kg → 两到三千克). A unit that needs a cue word (A) counts only where the unit rule has read it, so a seat
        keeps its 二 (座位2A). Not before a word that only begins with a measure word's character (周2下午 had been
        周两下午, `not_measure_words`)."""
        if self.not_measure.match(after):
            return False
        if self.liang_re.match(after):
            return True
        unit = self.unit_after.match(after)
        return unit is not None and unit[1] not in self.unit_cues and self._liang_unit(unit[1])

    def _math(self, m: re.Match[str]) -> str:
        return str(self.d["math_symbols"][m[1]])

    def _unit(self, m: re.Match[str]) -> str:
        """A number and its unit. After Latin letters a letter unit belongs to a name (iPhone6s, LED5W), unless a
        unit chain goes on (1h30min); a symbol unit is still a reading (GPU85°C)."""
        sign, number, unit = m.groups()
        before = m.string[: m.start()]
        if before[-1:].isascii() and before[-1:].isalpha() and unit[0].isascii() and not self.unit_chain.search(before):
            return m[0]
        if unit in self.name_suffix_units and re.search(r"[A-Za-z]\s$", before):
            return m[0]  # iPhone 6s: the model's letter
        name = self.unit_names.get(unit)
        if name and name.match(m.string, m.end()):
            return m[0]  # 4s店
        cue = self.unit_cues.get(unit)
        if cue and not cue.search(before[-8:]):
            return m[0]
        reading = str(self.units[unit])
        said = decimal(number.replace(",", ""), liang=self._liang_unit(unit))
        return self._sign(sign, number, reading) + said + reading

    def _number(self, m: re.Match[str]) -> str:
        sign, whole, frac = m.groups()
        after = m.string[m.end() :]
        if "," in whole:  # 第 2,000 位 is an ordinal: 第二千位, not 两千
            return self._sign(sign, whole, after) + decimal(whole.replace(",", "") + (frac or ""),
                                                     big_liang=not _after_ordinal(m.string[: m.start()]))
        number = whole + (frac or "")
        return self._sign(sign, number, after) + self._read_number(m.string[: m.start()], number, after)

    def _read_number(self, before: str, number: str, after: str) -> str:
        """A bare number: 两 before a measure word, digit by digit for long or zero-led strings (unless a
        measure word or 万/亿 shows an amount: 2000000元 → 两百万元)."""
        if "." in number:
            return decimal(number)
        liang = self._takes_liang(after)
        amount = bool(re.match(r"\s*[万亿]", after)) or liang
        if len(number) > 1 and (number.startswith("0") or len(number) >= 7) and not amount:
            return _read_code(number)
        ordinal = _after_ordinal(before) or bool(self.ordinal_re.match(after))
        return cardinal(number, liang=not ordinal and liang, big_liang=not ordinal)


_FRACTION_AFTER = re.compile(r"\s*(?:的|之|左右|以上|以下)")
_VERSION_AFTER = re.compile(r"\s*版")
# A dotted number and 到 right before another (0.15 到 0.16): the left end of a change of version.
_VERSION_BEFORE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)+)\s*到\s*$")
# 间 or 之间 right after a range's 年: the range's own "between" (在90-95年间).
_BETWEEN = re.compile(r"^之?间")
_BIG_OR_MORE = re.compile(r"\s*[万亿多年]")
_READING_AFTER = re.compile(r"\s*[%‰°]")
# A word that names a day or a part of one (周五, 星期日, 上午, 次日, 明天), in three kinds: a dash between two of one
# kind, or from a clock time to any, is a range.
_DAY_KINDS = (r"(?:周|星期|礼拜)[一二三四五六日天]", r"上午|下午|中午|晚上|傍晚|早上|凌晨",
              r"次日|翌日|今天|明天|后天|昨天|今晚|明早|明晚")
_DAY_WORD = "|".join(_DAY_KINDS)
# Each kind as the word ending the text before a dash and as the word starting the text after it.
_DAY_KIND_ENDS = tuple((re.compile(f"(?:{kind})$"), re.compile(kind)) for kind in _DAY_KINDS)
_CHOICE = re.compile(r"([\u3400-\u9fff][ \t]+)?(?<![A-Za-z.])([A-F])\.[ \t]+(?=[\u3400-\u9fff])")
# A clause's end in either width: NFKC has made the user's ！？，； ASCII by the time the rules run, but rules write
# the full-width comma (a list's items, a pause).
_CLAUSE_END = re.compile(r"[。，！？；,;!?\n]")


def _number_list(m: re.Match[str]) -> str:
    """A pause between the numbers of a spaced list, each read by the number rules (22 23 24 度 →
    二十二，二十三，二十四度); zero-padded ones, as a draw writes its balls, digit by digit, with a pause after the last
    where a word follows."""
    groups = m[0].split()
    if not any(group.startswith("0") for group in groups):
        return "，".join(groups)
    return "，".join(map(digits, groups)) + _pause_if_spaced(m)


def _pause_if_spaced(m: re.Match[str]) -> str:
    """A pause after a reading where a space set the next words apart (once read, the space itself is dropped)."""
    return "，" if m.string[m.end() : m.end() + 1].isspace() else ""


def _minute_mark(m: re.Match[str]) -> str:
    """第90' → 第90分钟, unless the mark closes a quote the clause opened (他说‘还剩3’, 回复 '3'): left as written."""
    clause = m.string[_clause_start(m.string, m.start()) : m.start()]
    if (m[2] == "’" and "‘" in clause) or (m[2] == "'" and clause.count("'") % 2):
        return m[0]
    return m[1] + "分钟"


def _minutes_seconds(minutes: str, seconds: str | None) -> str:
    """A prime's and a double prime's values as 分 and 秒, left to the number rules to read."""
    return minutes + "分" + (seconds + "秒" if seconds else "")


def _clause_start(text: str, pos: int) -> int:
    """Where the clause holding ``pos`` begins: a cue (座位, 航班) reaches no further back than a comma or a stop."""
    return max((c.end() for c in _CLAUSE_END.finditer(text, 0, pos)), default=0)


def _half_of_a_range(m: re.Match[str]) -> str:
    """8:00-8:30 AM → 8:00 AM-8:30: the clock rule then says 上午 once, before the first time."""
    h1, m1, dash, h2, m2, half = m.groups()
    if int(h1) > int(h2) and int(h1) != 12:
        return m[0]
    return f"{h1}{m1} {half}{dash}{h2}{m2}"


def _shorthand(amount: str) -> str:
    """1.2w → 1.2万, 15k → 15000 (一万五千; 十五千 is no number), 1.2M → 120万, 3.5B → 35亿: the shorthand of
    chats, job ads and finance news, in the units Chinese counts in."""
    if amount[-1] in "wW":
        return amount[:-1] + "万"
    scale, big = {"M": (100, "万"), "B": (10, "亿")}.get(amount[-1], (1000, ""))
    value = Decimal(amount[:-1]) * scale
    return str(value.normalize() if value % 1 else int(value)) + big


def _after_ordinal(before: str) -> bool:
    """第 makes an ordinal also with spaces before the number (第 2 次 → 第二次, as 第2次), so 2 is 二, never 两."""
    return before.rstrip().endswith("第")


def _offset(zone: str) -> str:
    """An ISO timestamp's zone as it follows UTC: nothing for Z and a zero offset, else the offset."""
    return "" if zone == "Z" or not zone.strip("+-0:") else zone


def _countdown(*parts: str | None) -> str:
    """剩余 05:30 → 五分三十秒, 还剩 1:05:30 → 一小时五分三十秒: a countdown's parts are counts (2 is 两), and a zero
    part is not said."""
    values = [p for p in parts if p is not None]
    return _span(values, ("小时", "分", "秒")[-len(values) :]) or "零秒"


def _letter_span(hours: str | None, minutes: str, seconds: str | None) -> str:
    """7h 32m → 七小时三十二分钟, 3m 20s → 三分二十秒: minutes said 分钟 where they end the span, as a duration is."""
    parts = [(hours, "小时"), (minutes, "分" if seconds else "分钟"), (seconds, "秒")]
    present = [(v, u) for v, u in parts if v is not None]
    return _span([v for v, _ in present], [u for _, u in present]) or "零秒"


def _span(values: Sequence[str], units: Sequence[str]) -> str:
    """Parts of a span of time, each a count (2 is 两) with its unit; a zero part is not said (empty if all are)."""
    return "".join(cardinal(v, liang=True) + u for v, u in zip(values, units, strict=True) if int(v))


def _jiao_fen(amount: str) -> bool | None:
    """Whether a 元 amount's decimals are said in 角/分 (¥12.5, ¥0.05); None where it has none. Three or more
    decimals (¥0.617/度) cannot be, and read with 点 (零点六一七元)."""
    if "." not in amount:
        return None
    return len(amount.partition(".")[2]) <= 2


def _yuan(amount: str) -> str:
    """¥12.50 → 十二元五角, ¥0.05 → 五分: the way prices are read, not 十二点五零元."""
    whole, _, frac = amount.partition(".")
    frac = (frac + "00")[:2]
    out = cardinal(whole, liang=True) + "元" if int(whole) else ""
    if frac[0] != "0":
        out += cardinal(frac[0], liang=True) + "角"
    if frac[1] != "0":
        out += ("零" if out and frac[0] == "0" else "") + cardinal(frac[1], liang=True) + "分"
    return out or "零元"


def _date(month: str, day: str, year: str | None = None) -> str:
    """A date as it is said: the year digit by digit, month and day as numbers (二零二六年十二月六日)."""
    return (f"{digits(year)}年" if year else "") + f"{cardinal(month)}月{cardinal(day)}日"


def _read_code(code: str) -> str:
    """Phone numbers, codes, room and flight numbers: letters kept, digits one by one with 1 as 幺."""
    return re.sub(r"\d+", lambda d: digits(d[0], one="幺"), re.sub(r"[\s-]+", "", code))


@functools.cache
def _rules() -> _Rules:
    return _Rules()


# An emoji (and the spaces around it) between two words separates them as a notification writes it (门已打开 🚪 请注意):
# a pause, which _tidy drops at the start or end of the text and merges with a pause mark beside it.
_EMOJI = re.compile(r"\s*[\U0001F000-\U0001FAFF\u2300-\u23FF\u2600-\u27BF\u2B00-\u2BFF][\U0001F000-\U0001FAFF"
                    r"\u2300-\u23FF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D\s]*")
# Round brackets around words are an aside, read with a pause on each side (本周三（12月9日）有检查 →
# 本周三，十二月九日，有检查), not run into the words beside them (三十二月); around a number alone (共 (12) 个,
# 贵州茅台（600519）) they are only dropped, as other brackets and quotes are (_DROP).
_ASIDE = re.compile(r"[(（]([^()（）\n]*)[)）]")
_NUMBER_ALONE = re.compile(rf"[\s\d.{DIGITS}十百千万亿两幺点]*")


def _aside(m: re.Match[str]) -> str:
    return m[1] if _NUMBER_ALONE.fullmatch(m[1]) else "，" + m[1] + "，"

# A heading in square brackets that opens a notification or a sentence (【京东】验证码…, [报警] 客厅…, 【停电通知】, as
# text messages and alarms are headed) is its sender or its kind, a pause after it (京东，验证码…): it had run into the
# sentence (京东验证码, 报警客厅检测到); settled 2026-12-06. Not a number alone (【12】号, read by then), nor brackets
# inside a sentence, which _DROP leaves unsaid as before.
_HEADING = re.compile(r"(?:^|(?<=[。！？!?\n，]))(\s*)[【\[〔〖]([^】\]〕〗\n]+)[】\]〕〗](?=\s*[^\s。，！？])")


def _heading(m: re.Match[str]) -> str:
    return m[0] if _NUMBER_ALONE.fullmatch(m[2]) else m[1] + m[2] + "，"

# An apostrophe between two Latin letters is part of the word (I'm, don't, McDonald's: the English lexicon knows them
# with it), typed or typographic (I’m, as replies write it); it had been dropped as a quote, and I'm was read "I, M".
# Any other is a quote.
_DROP = re.compile(r"[\"“”‘«»《》「」『』【】()\[\]{}（）<>〈〉]|(?<![A-Za-z])['’]|['’](?![A-Za-z])")
# A hyphen between two Latin words is a space (Wi-Fi → Wi Fi, Type-C → Type C): it is not said, and the two are
# said as two words; one left next to digits (KFR-35GW, 1080P-4K) was read by the rules above.
_LATIN = r"[A-Za-z]+(?:'[A-Za-z]+)*"
_ELLIPSIS = re.compile(r"(?:\.{3,}|…+|。{3,})")
_SPOKEN = re.compile(rf"({_LATIN}|[\u3400-\u9fff。，！？]+)|.", re.DOTALL)
_MARKS = "。，！？"
# A single long dash between two numbers or dates marks a range (1998—2003, 9:00—18:00, 1日—5日; GB/T 15834 writes
# 起止 so), read like "-", also between two values with their words (10点—12点, 第3名—第5名 had been 十点，十二点);
# anywhere else it is a pause (pre_nfkc).
_NUMBER_DASH = re.compile(r"(?:(?<=\d)|(?<=\d[\u3400-\u9fff])|(?<=\d[\u3400-\u9fff]{2}))\s*[—―](?=\s*第?\d)")
# An HTML character reference (&nbsp; &amp; &lt; &#8451;) in a reply or a scraped notification is the character it
# stands for; its name had been read (温度&nbsp;25℃ → 温度和nbsp，…). Only the full form with its semicolon.
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z\d]{1,31});")
# A circled number starting a line (① 取快递) is a list marker, read as "1." is; NFKC would make it a bare 1.
_CIRCLED = "[\u2460-\u2473\u2776-\u277f\u2780-\u2793]"
_CIRCLED_ITEM = re.compile(rf"(?m)^([ \t]*)({_CIRCLED})")
# ... and one inside a line after a space or a list's punctuation (结果：①客厅灯 ②卧室灯) a marker between pauses; the
# items had run together (一客厅灯二卧室灯).
_CIRCLED_INLINE = re.compile(rf"(?<=[\s：:，,、；;])({_CIRCLED})")
# A numbered item inside a line (结果：1) 客厅 2) 卧室, 1. 开灯 2. 关窗), as assistants write short lists: the items had
# run together and 2. had ended a sentence (一客厅二卧室, 一。开灯二。关窗). Only a run counted from 1 with one kind of
# mark is a list (_inline_items): a lone "25." after a space stays a number before a full stop.
_INLINE_ITEM = re.compile(r"(?m)(?:^|(?<=[\s：:，,；;]))(\d{1,2})([.)）])(?=[ \t]*[^\d\s.)）]|[ \t]+\d)")


def _inline_items(text: str) -> str:
    runs: list[list[re.Match[str]]] = []
    for m in _INLINE_ITEM.finditer(text):
        run = runs[-1] if runs else []
        if run and int(m[1]) == int(run[-1][1]) + 1 and (m[2] == ".") == (run[-1][2] == "."):
            run.append(m)
        elif m[1] == "1":
            runs.append([m])
    starts = {m.start() for run in runs if len(run) > 1 for m in run}
    if not starts:
        return text
    return _INLINE_ITEM.sub(lambda m: f"，{m[1]}，" if m.start() in starts else m[0], text)


# A vulgar fraction (½, ¾), after a whole number or alone: NFKC makes ¼ "1⁄4", whose digits were read as 一四, and
# 2½ "21⁄2" (二十一两). Said as a fraction is: 四分之一, 二又二分之一.
_VULGAR = re.compile(r"(\d*)\s*([\u00bc-\u00be\u2150-\u215e])")


# A power written with superscript digits or ^ (10⁶, 2^10): NFKC would make 10⁶ "106"; the ^ was dropped (2^10 → 二十).
# ² and ³ after a letter are areas and volumes (m², x²: pre_nfkc).
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_POWER = re.compile(rf"(?<![\d.])(\d+(?:\.\d+)?)(?:([{_SUPERSCRIPTS}]+)|\s*\^\s*(\d+))")


def _power(m: re.Match[str]) -> str:
    exponent = m[3] or "".join(str(_SUPERSCRIPTS.index(c)) for c in m[2])
    return f"{m[1]}的{cardinal(exponent)}次方"


def _vulgar(m: re.Match[str]) -> str:
    value = Fraction(unicodedata.numeric(m[2])).limit_denominator(10)
    said = cardinal(str(value.denominator)) + "分之" + cardinal(str(value.numerator))
    return (m[1] + "又" if m[1] else "") + said


def normalize(text: str) -> str:
    """Only Chinese characters, Latin words and the pause marks ``。，！？`` remain; numbers are read out."""
    rules = _rules()
    text = _ENTITY.sub(lambda m: html.unescape(m[0]), text)
    text = _NUMBER_DASH.sub("-", text)
    text = _VULGAR.sub(_vulgar, text)
    text = _POWER.sub(_power, text)
    text = _CIRCLED_ITEM.sub(lambda m: m[1] + str(int(unicodedata.numeric(m[2]))) + ".", text)
    text = _CIRCLED_INLINE.sub(lambda m: "，" + str(int(unicodedata.numeric(m[1]))) + "，", text)
    text = _inline_items(text)
    text = unicodedata.normalize("NFKC", rules.pre.sub(lambda m: rules.d["pre_nfkc"][m[0]], text))
    for pattern, reader in rules.rules:
        text = pattern.sub(reader, text)
    return clean_marks(text)


def clean_marks(text: str) -> str:
    """The punctuation half of ``normalize`` (no number reading); the baselines' comparison uses it too."""
    text = unicodedata.normalize("NFKC", text)
    text = _ELLIPSIS.sub(lambda m: "。" if not text[m.end() :].strip() else "，", text)
    text = _HEADING.sub(_heading, _ASIDE.sub(_aside, _EMOJI.sub("，", text)))
    return _tidy(_DROP.sub(" ", text).replace("’", "'").translate(_rules().pauses))


def _tidy(text: str) -> str:
    """Drop what cannot be spoken; keep one space only between two Latin words; one pause mark per pause."""
    out: list[str] = []
    space = False
    for m in _SPOKEN.finditer(text):
        token = m[1]
        if token is None:
            space = True
            continue
        if space and out and out[-1][-1].isascii() and token[0].isascii():
            out.append(" ")
        out.append(token)
        space = False
    text = "".join(out)
    text = re.sub(rf"[{_MARKS}]*([{_MARKS}])", lambda m: _strongest(m[0]), text)
    return text.lstrip(_MARKS).rstrip("，")


def _strongest(marks: str) -> str:
    """A run like ``？。`` or ``，。`` keeps its strongest mark (question over exclamation over stop)."""
    for mark in "？！。，":
        if mark in marks:
            return mark
    return marks[-1]

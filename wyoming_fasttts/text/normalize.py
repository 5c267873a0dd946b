"""Spoken form of Chinese text: every number read out the way a native reader would, symbols dropped.

Rules run in a fixed order, most specific first (a date must be read before its parts look like a
subtraction), each one a regular expression plus a reader. The words that steer a reading (measure words
that take 两, cues for digit-by-digit numbers, units) live in ``data/normalize.yaml``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

from .data import load_yaml
from .numbers import DIGITS, cardinal, decimal, digits

_NUM = r"\d+(?:\.\d+)?"
# A whole number with thousands separators (1,650).
_GROUPED = r"\d{1,3}(?:,\d{3})+"
_Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


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
        self.year_before = re.compile(rf"(?:{_alternation(d['year_count_before'])})$")
        self.year_after = re.compile(rf"(?:{_alternation(d['year_count_after'])})")
        self.short_year_after = re.compile(rf"(?:{_alternation(d['short_year_count_after'])})")
        self.year_context = re.compile(rf"(?:{_alternation(d['year_context_before'])})$")
        self.pre = re.compile(_alternation(d["pre_nfkc"]))
        self.unit_re = re.compile(rf"\s*(?:{_alternation(self.units)})(?![A-Za-z])")
        self.unit_chain = re.compile(rf"\d\s*(?:{_alternation(self.units)})$")
        self.rules = self._compile(d)

    def _compile(self, d: dict[str, Any]) -> list[_Rule]:
        unit = _alternation(self.units)
        money = _alternation(d["currency_prefix"])
        signs = "".join(sorted({re.escape(symbol[-1]) for symbol in d["currency_prefix"]}))
        cue_before = _alternation(d["digit_cues_before"])
        cue_after = _alternation(d["digit_cues_after"])
        ratio = _alternation(d["ratio_cues"])
        math = "".join(re.escape(s) for s in d["math_symbols"])
        service = _alternation(d["service_numbers"])
        compare = "".join(re.escape(s) for s in d["compare_symbols"])
        per = _alternation(d["per_words"])
        # A clock or ratio pair is not part of a longer one (12:03:45) but may follow a colon (提醒：08:05).
        pair = r"(?<!\d[:：])(?<![\d.])"
        return [
            (re.compile(rf"(?<![A-Za-z])([{d['plate_provinces']}])([A-Z])\s*[·.]?\s*(?=[A-Z\d]{{5,6}}(?![A-Za-z\d]))"
                        r"([A-Z]*\d[A-Z\d]*)"), self._plate),
            (re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])(?:\s*[:：]\s*(\d{1,5})(?!\d))?"), self._ip),
            (re.compile(r"(?<![\d.])\d+(?:\.\d+)+(?![\d.])"), self._version),
            (re.compile(r"(?<!\d)(\d{4})\s*[-/.]\s*(\d{1,2})\s*[-/.]\s*(\d{1,2})(?![\d.])(?:\s*[日号])?"), self._ymd),
            (re.compile(rf"(?:(?<=[日号])\s*[-~]\s*(?=\d{{1,2}}月|[{DIGITS}]{{4}}年)"
                        r"|(?:(?<=[%‰])|(?<=°C)|(?<=\d[千万亿]))\s*[-~]\s*(?=\d))"),
             lambda m: "到"),
            # A dash after a value that ends in letters (1080P-4K, 2.4GHz-5GHz, 3V-5V) is a range too, not a minus;
            # not inside a code, where letters or a dash come first (KFR-35GW-2).
            (re.compile(r"(?<![A-Za-z\d.\-])(\d+(?:\.\d+)?\s*[A-Za-z]{1,4})\s*[-~]\s*(?=\d)"), lambda m: m[1] + "到"),
            (re.compile(r"(?<!\d)(\d{1,2})月(\d{1,2})(?=[日号])"), self._md),
            (re.compile(r"(?<![\d./])(\d{1,2})/(\d{1,2})(?![\d/])"), self._month_day),
            # №3, No.3, 3#楼 (№ became # above); not a Markdown heading (## 1. …).
            (re.compile(r"(?:(?<!#)#|(?<![A-Za-z])N[oO]\.)\s?(\d+)(?![\d.])号?|(\d+)#(?!#)"),
             lambda m: (m[1] or m[2]) + "号"),
            # Letters, a dot, digits (H.265, G.711, Vol.3): the dot is said 点 and the digits follow the rule for
            # digits joined to letters, rather than a pause that loses the number.
            (re.compile(r"(?<![A-Za-z])([A-Za-z]+)\.(\d+(?:\.\d+)*)(?![\d.])"), self._letter_dot),
            (re.compile(rf"(?:{cue_before})(?:是|为|：|:|\s)*[A-Z]{{0,3}}-?(?:\d[\d -]*\d|\d)"), self._cued),
            (re.compile(rf"(?<![\d.])\d{{3,}}(?:-\d+)*(?=\s*(?:{cue_after}))"), self._digit_string),
            (re.compile(r"(?<![\d.\-])(?:\+86[\s-]*)?(?:1[3-9]\d[\s-]?\d{4}[\s-]?\d{4}|0\d{2,3}(?:-\d{7,8}|[\s-]\d{3,4}[\s-]\d{4})"
                        r"|400-?\d{3}-?\d{4})(?![\d.])"), self._digit_string),
            # Three or more dash-joined groups that are not a date or a phone number: a code (取件 3-4-1187).
            (re.compile(r"(?<![\d.\-])\d{1,4}(?:-\d{1,4}){2,}(?![\d.\-])"), self._digit_string),
            # Not an amount: ¥120, 120,000 and 120GB are money and quantities, not the ambulance line.
            (re.compile(rf"(?<![\d.A-Za-z{signs}])(?:{service})(?![\d.A-Za-z]|,\d)"), self._service),
            # A dash joining letters and digits makes a code (KFR-35GW, E-101, i9-13900K); the dash is not read.
            (re.compile(r"(?<![A-Za-z\d.])[A-Za-z]{1,5}\d*(?:-[A-Za-z]*\d[A-Za-z\d]*)+"), self._digit_string),
            # Letters joined to three or more digits are a model or chip number (ESP8266, rtx4090), not a reading
            # (CPU100%); one or two digits read as a number (ESP32, PS5), except in a train number (K1次).
            (re.compile(r"(?<![A-Za-z])[A-Za-z]+\d{3,}(?!\d|\.\d|\s*[%‰°])|(?<![A-Za-z])[GDCKTZYSL]\d{1,4}(?=\s*次)"),
             self._digit_string),
            # Video resolutions (1080P, 720p); 4K is a number of thousands and reads as one.
            (re.compile(r"(?<![\d.A-Za-z])\d{3,4}(?=[pP](?![A-Za-z]))"), self._digit_string),
            (re.compile(rf"((?:{ratio})(?:是|为)?\s*)(\d+)\s*[:：]\s*(\d+)"), self._ratio),
            (re.compile(pair + r"(\d{1,2})[:：](\d{2})(?:[:：](\d{2}))?(?![\d:])(\s*[-~至]\s*(?=\d{1,2}[:：]\d{2}))?"),
             self._clock),
            # A bare ratio never starts on a digit of a Latin name (CO2：1350ppm is a reading after a colon).
            (re.compile(pair + r"(?<![A-Za-z])(\d+)[:：](\d+)(?![\d:])"), self._ratio),
            (re.compile(rf"\s*([{compare}])\s*(?=[-\d])"), lambda m: self.d["compare_symbols"][m[1]]),
            (re.compile(r"(?<=\d)\+(?!\s*\d)"), lambda m: "加"),
            (re.compile(rf"(-?)({money})\s*(\d(?:\d|,(?=\d{{3}}))*(?:\.\d+)?)(万|亿)?"), self._money),
            (re.compile(rf"(?<![\d.])(-?)({_NUM})\s*([%‰])"), self._percent),
            (re.compile(rf"(?<![\d.,])(-?)({_GROUPED}|\d+)(\.\d{{1,2}})元"), self._yuan),
            (re.compile(r"(?<![\d./])(\d+)/(\d+)(?![\d/])"), self._fraction),
            (re.compile(r"(?<![\d.])([5-9][05]|[01][05]|00)(?=后)"), lambda m: digits(m[1])),
            (re.compile(r"(?<![\d.])((?:19|20)\d\d)\s*[-~]\s*((?:19|20)\d\d)(?![\d.])"), self._year_range),
            (re.compile(r"(?<![\d.])(\d{1,3})\s*[-~]\s*(\d{1,3})(?=年)"), self._short_range_of_years),
            (re.compile(rf"(?<![\d.])(-?)({_NUM})\s*[-~～]\s*(?=-?\d)"), self._range),
            (re.compile(r"(?<!\d)(\d{2,4})(?=年)"), self._year),
            (re.compile(rf"(?<=\d)\s*([{math}])\s*(?=[-\d])"), self._math),
            (re.compile(rf"(?<![\d.])(-?)((?:{_GROUPED}|\d+)(?:\.\d+)?)\s*({unit})(?![A-Za-z])"), self._unit),
            (re.compile(rf"(?<=[\u3400-\u9fff])\s*/\s*(?=(?:{per}))"), lambda m: "每"),
            (re.compile(rf"(?<=[\u3400-\u9fff])\s*/\s*({unit})(?![A-Za-z])"), lambda m: "每" + self.units[m[1]]),
            (re.compile(rf"(?<![\d.])(-?)({_GROUPED}|\d+)(\.\d+)?"), self._number),
            # Digits no rule above read (after a stray dot: 约.5) are still said: nothing the user wrote is dropped.
            (re.compile(r"\d+"), lambda m: digits(m[0])),
        ]

    # --- readers -------------------------------------------------------------------------------
    def _ymd(self, m: re.Match[str]) -> str:
        y, mo, day = m.groups()
        return f"{digits(y)}年{cardinal(mo)}月{cardinal(day)}日"

    def _md(self, m: re.Match[str]) -> str:
        return f"{cardinal(m[1])}月{cardinal(m[2])}"

    def _plate(self, m: re.Match[str]) -> str:
        """苏E·6K3M9: no pause after the province letter, the rest as a code."""
        return m[1] + m[2] + _read_code(m[3])

    def _ip(self, m: re.Match[str]) -> str:
        """192.168.1.10:8123: each part a code, and a port after 冒号 (not a pause: it belongs to the address)."""
        address, port = m.groups()
        return "点".join(_read_code(part) for part in address.split(".")) + ("冒号" + _read_code(port) if port else "")

    def _version(self, m: re.Match[str]) -> str:
        """v3.2.1, 2025.11 版本: each part a number (a four-digit year part digit by digit); else untouched."""
        parts = m[0].split(".")
        before, after = m.string[: m.start()], m.string[m.end() :]
        cue = bool(_VERSION_BEFORE.search(before) or _VERSION_AFTER.match(after))
        # Joined to a name (HA2024.12, iOS17.10), or a year.month after one (Home Assistant 2024.12), it is a version
        # too, unless a unit or % makes it a reading (GPU85.5°C).
        named = re.search(r"[A-Za-z]$" if len(parts[0]) < 4 else r"[A-Za-z]\s?$", before)
        joined = bool(named) and not (self.unit_re.match(after) or _READING_AFTER.match(after))
        if len(parts) == 2 and not (cue or joined):
            return m[0]
        if len(parts) == 3 and len(parts[0]) == 4 and not (cue or re.search(r"[A-Za-z]\s*$", before)):
            return m[0]  # 2025.06.18: a date
        return "点".join(digits(p) if len(p) == 4 or (len(p) > 1 and p[0] == "0") else cardinal(p) for p in parts)

    def _month_day(self, m: re.Match[str]) -> str:
        """5/20 is a date when it can only be one (day 13–31); 1/5 stays a fraction."""
        month, day = int(m[1]), int(m[2])
        if 1 <= month <= 12 and 13 <= day <= 31 and not _FRACTION_AFTER.match(m.string[m.end() :]):
            return f"{cardinal(m[1])}月{cardinal(m[2])}日"
        return m[0]

    def _letter_dot(self, m: re.Match[str]) -> str:
        """H.265 → H点二六五, Vol.3 → Vol点三: nothing is dropped, and each part reads as digits joined to letters do
        (three or more, or a leading zero, one by one like a model number; fewer as a number)."""
        parts = m[2].split(".")
        return m[1] + "点" + "点".join(_read_code(p) if len(p) >= 3 or p[0] == "0" else cardinal(p) for p in parts)

    def _cued(self, m: re.Match[str]) -> str:
        text = m[0]
        start = re.search(r"[A-Z]*\d", text)
        assert start is not None
        return text[: start.start()] + _read_code(text[start.start() :])

    def _digit_string(self, m: re.Match[str]) -> str:
        return _read_code(m[0].replace("+", "加"))

    def _service(self, m: re.Match[str]) -> str:
        """110, 12345 …: dialled numbers, unless a measure word shows they count something (120个)."""
        after = m.string[m.end() :]
        counts = (self.liang_re, self.ordinal_re, self.unit_re, _BIG_OR_MORE)
        return m[0] if any(r.match(after) for r in counts) else _read_code(m[0])

    def _ratio(self, m: re.Match[str]) -> str:
        *cue, a, b = m.groups()
        return f"{cue[0] if cue else ''}{cardinal(a)}比{cardinal(b)}"

    def _clock(self, m: re.Match[str]) -> str:
        h, mi, s, until = m.groups()
        if int(h) > 24 or int(mi) > 59 or (s and int(s) > 59):
            before = m.string[m.start() - 1 : m.start()]
            if before.isascii() and before.isalpha():
                return m[0]  # PM10：85: a name's digits, then a reading after the colon
            return f"{cardinal(h)}比{cardinal(mi)}" + (f"比{cardinal(s)}" if s else "")
        out = cardinal(h, liang=True) + "点"
        s = s if s and int(s) else None  # 09:00:00 is 九点
        if int(mi) or s:
            out += ("零" if mi.startswith("0") and int(mi) else "") + cardinal(mi) + "分"
        if s:
            out += ("零" if s.startswith("0") and int(s) else "") + cardinal(s) + "秒"
        return out + (("至" if "至" in until else "到") if until else "")

    def _money(self, m: re.Match[str]) -> str:
        sign, symbol, amount, big = m.groups()
        unit = self.d["currency_prefix"][symbol]
        amount = amount.replace(",", "")
        if unit in self.d["jiao_fen_units"] and "." in amount and not big:
            return ("负" if sign else "") + _yuan(amount)
        return ("负" if sign else "") + decimal(amount, liang=True) + (big or "") + str(unit)

    def _yuan(self, m: re.Match[str]) -> str:
        return ("负" if m[1] else "") + _yuan(m[2].replace(",", "") + m[3])

    def _percent(self, m: re.Match[str]) -> str:
        sign, number, mark = m.groups()
        special = self.d["percent_special"].get(number + mark)
        if special and not sign:
            return str(special)
        return ("负" if sign else "") + ("百分之" if mark == "%" else "千分之") + decimal(number)

    def _fraction(self, m: re.Match[str]) -> str:
        return f"{cardinal(m[2])}分之{cardinal(m[1])}"

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
        now precedes it. Two-digit years show themselves by a leading zero or a start past the end (98-02年)."""
        start, end = m.groups()
        zero_led = any(len(n) > 1 and n[0] == "0" for n in (start, end))
        if zero_led or int(start) > int(end):
            return digits(start) + "到" + digits(end)
        before, after = m.string[: m.start()], m.string[m.end() :]
        return self._read_number(before, start, after) + "到" + self._read_number(before, end, after)

    def _range(self, m: re.Match[str]) -> str:
        """The left end of 3-5天 or 2020-2024年 reads the way the right end will."""
        sign, number = m.groups()
        after = m.string[m.end() :]
        if len(number) == 4 and re.match(r"\d{4}年", after):
            return digits(number) + "到"
        return self._sign(sign, after) + self._read_number("", number, "到" + after) + "到"

    def _year_range(self, m: re.Match[str]) -> str:
        """2025-2026赛季: two years, unless a measure word shows they are amounts (2000-2500元)."""
        after = m.string[m.end() :]
        # 年 takes 两 after a count, but two 19xx/20xx numbers before it are years (2019-2021年间).
        if not after.startswith("年") and (self.liang_re.match(after) or self.unit_re.match(after)):
            return m[0]
        return digits(m[1]) + "到" + digits(m[2])

    def _sign(self, sign: str, after: str) -> str:
        """零下 for temperatures, 负 otherwise."""
        if not sign:
            return ""
        unit = re.match(rf"[-~到\d.\s]*({_alternation(self.units)})?", after)
        reading = self.units.get(unit[1], "") if unit and unit[1] else after.lstrip("-~到0123456789. ")
        return "零下" if reading.startswith(tuple(self.temperature)) else "负"

    def _math(self, m: re.Match[str]) -> str:
        return str(self.d["math_symbols"][m[1]])

    def _unit(self, m: re.Match[str]) -> str:
        """A number and its unit. After Latin letters a letter unit belongs to a name (iPhone6s, LED5W), unless a
        unit chain goes on (1h30min); a symbol unit is still a reading (GPU85°C)."""
        sign, number, unit = m.groups()
        before = m.string[: m.start()]
        if before[-1:].isascii() and before[-1:].isalpha() and unit[0].isascii() and not self.unit_chain.search(before):
            return m[0]
        cue = self.unit_cues.get(unit)
        if cue and not cue.search(before[-8:]):
            return m[0]
        reading = str(self.units[unit])
        liang = bool(self.liang_re.match(reading))
        return self._sign(sign, reading) + decimal(number.replace(",", ""), liang=liang) + reading

    def _number(self, m: re.Match[str]) -> str:
        sign, whole, frac = m.groups()
        after = m.string[m.end() :]
        if "," in whole:
            return self._sign(sign, after) + decimal(whole.replace(",", "") + (frac or ""))
        return self._sign(sign, after) + self._read_number(m.string[: m.start()], whole + (frac or ""), after)

    def _read_number(self, before: str, number: str, after: str) -> str:
        """A bare number: 两 before a measure word, digit by digit for long or zero-led strings (unless a
        measure word or 万/亿 shows an amount: 2000000元 → 两百万元)."""
        if "." in number:
            return decimal(number)
        amount = bool(re.match(r"\s*[万亿]", after) or self.liang_re.match(after))
        if len(number) > 1 and (number.startswith("0") or len(number) >= 7) and not amount:
            return _read_code(number)
        ordinal = before.endswith("第") or bool(self.ordinal_re.match(after))
        return cardinal(number, liang=not ordinal and bool(self.liang_re.match(after)), big_liang=not ordinal)


_FRACTION_AFTER = re.compile(r"\s*(?:的|之|左右|以上|以下)")
_VERSION_BEFORE = re.compile(r"(?:(?<![A-Za-z])[vV]|版本号?[:：]?\s*|更新到\s*|升级到\s*)$")
_VERSION_AFTER = re.compile(r"\s*版")
_BIG_OR_MORE = re.compile(r"\s*[万亿多年]")
_READING_AFTER = re.compile(r"\s*[%‰°]")


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


def _read_code(code: str) -> str:
    """Phone numbers, codes, room and flight numbers: letters kept, digits one by one with 1 as 幺."""
    return re.sub(r"\d+", lambda d: digits(d[0], one="幺"), re.sub(r"[\s-]+", "", code))


@functools.cache
def _rules() -> _Rules:
    return _Rules()


_DROP = re.compile(r"[\"'“”‘’«»《》「」『』【】()\[\]{}（）<>〈〉]")
_LATIN = r"[A-Za-z]+(?:['-][A-Za-z]+)*"
_ELLIPSIS = re.compile(r"(?:\.{3,}|…+|。{3,})")
_SPOKEN = re.compile(rf"({_LATIN}|[\u3400-\u9fff。，！？]+)|.", re.DOTALL)
_MARKS = "。，！？"
# A single long dash between two numbers marks a range (1998—2003, 9:00—18:00; GB/T 15834 writes 起止 so),
# read like "-"; anywhere else it is a pause (pre_nfkc).
_NUMBER_DASH = re.compile(r"(?<=\d)\s*[—―](?=\s*\d)")


def normalize(text: str) -> str:
    """Only Chinese characters, Latin words and the pause marks ``。，！？`` remain; numbers are read out."""
    rules = _rules()
    text = _NUMBER_DASH.sub("-", text)
    text = unicodedata.normalize("NFKC", rules.pre.sub(lambda m: rules.d["pre_nfkc"][m[0]], text))
    for pattern, reader in rules.rules:
        text = pattern.sub(reader, text)
    return clean_marks(text)


def clean_marks(text: str) -> str:
    """The punctuation half of ``normalize`` (no number reading); the baselines' comparison uses it too."""
    text = unicodedata.normalize("NFKC", text)
    text = _ELLIPSIS.sub(lambda m: "。" if not text[m.end() :].strip() else "，", text)
    return _tidy(_DROP.sub(" ", text).translate(_rules().pauses))


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

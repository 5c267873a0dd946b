"""How a string of ASCII digits is read aloud: as a quantity, digit by digit, or with 两 for two.

Pure functions with no context: ``normalize`` decides which reading a number in a sentence gets.
"""

from __future__ import annotations

DIGITS = "零一二三四五六七八九"
_SMALL_UNITS = ("", "十", "百", "千")
_BIG_UNITS = ("", "万", "亿", "万亿")
_UNCOUNTED = 10 ** (4 * len(_BIG_UNITS))  # past 万亿's reach no one counts: an ID or a code, read digit by digit


def digits(number: str, one: str = "一") -> str:
    """Digit by digit; ``one="幺"`` is how 1 is said in phone numbers, codes and room numbers."""
    return "".join(one if d == "1" else DIGITS[int(d)] for d in number)


def _group(number: int) -> str:
    """0 < number < 10000, with 零 for inner gaps (1005 → 一千零五)."""
    out, gap = "", False
    for power in range(3, -1, -1):
        d = number // 10**power % 10
        if d == 0:
            gap = bool(out)
            continue
        if gap:
            out += "零"
            gap = False
        out += DIGITS[d] + _SMALL_UNITS[power]
    return out


def cardinal(number: str, liang: bool = False, big_liang: bool = True) -> str:
    """A whole number as a quantity.

    ``liang`` reads a bare 2 as 两 (两个; a count before a measure word); ``big_liang`` a leading 2 before
    百千万亿 (两千, 两万), which is how amounts are said, though not ordinals (第二千名). 10..19 drop the
    leading 一 (十二, not 一十二) only at the very start, as people say them.
    """
    value = int(number)
    if value == 0:
        return "零"
    if value >= _UNCOUNTED:
        return digits(number)
    groups: list[int] = []
    while value:
        groups.append(value % 10000)
        value //= 10000
    out, gap = "", False
    for i in range(len(groups) - 1, -1, -1):
        g = groups[i]
        if g == 0:
            gap = bool(out)
            continue
        if out and (gap or g < 1000):
            out += "零"
        out += _group(g) + _BIG_UNITS[i]
        gap = False
    if out.startswith("一十"):
        out = out[1:]
    if out.startswith("二") and (liang if len(out) == 1 else big_liang and out[1] in "百千万亿"):
        out = "两" + out[1:]
    return out


def decimal(number: str, liang: bool = False, big_liang: bool = True) -> str:
    """``12.05`` → 十二点零五: the whole part as a quantity, the fraction digit by digit."""
    whole, _, frac = number.partition(".")
    head = cardinal(whole or "0", liang=liang and not frac, big_liang=big_liang)
    return head + ("点" + digits(frac) if frac else "")

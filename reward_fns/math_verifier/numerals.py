"""Numbers written in words, in other numeral systems and in other digits.

Each reading is done by a maintained library, imported when first needed
(importing rewardsmith stays fast):

* number words in English, French, Spanish, German, Portuguese, Italian and
  Dutch ("forty-two", "vingt et un", "dreiundzwanzig"): ``text2num``; a
  leading "negative"/"minus" (or the language's word) is the sign;
* Roman numerals of at least two letters, upper case ("XIV", "MCMXCIV"):
  ``roman`` (one letter is a choice or a variable: "C", "I", "V");
* Chinese numerals ("一百二十三", "负五", "二点五", "两千"): ``cn2an``; a fraction
  "三分之一" (1/3) and a percentage "百分之二十" (20%) are read here around it;
* other digits (:func:`plain_digits`): every Unicode decimal digit (category
  Nd: Arabic-Indic, Devanagari, fullwidth, mathematical bold, ...) becomes its
  ASCII digit; characters of the fullwidth forms (U+FF01-U+FF5E) and the
  mathematical alphanumeric symbols (U+1D400-U+1D7FF) become their NFKC form
  ("１２．５" -> "12.5", "𝐱" -> "x"); and these look-alikes become ASCII:
  minus and dashes before a digit (also APL's high minus ``¯7`` and a
  calculator's raised minus ``⁻5``), no-break / thin / narrow spaces, the Arabic
  decimal and thousands separators. Superscripts and subscripts are left alone
  (they are powers and indices, not digits; ``notation`` reads them); a keycap
  emoji is its digit (:func:`keycap_digits`: "1️⃣8️⃣" -> "18", "🔟" -> "10");
* digits with the myriad magnitudes of Chinese, Japanese and Korean
  (:func:`myriad_numbers`): "12万" (120000), "3.6万" (36000), "5万4千" (54000),
  "2만 5천" (25000), "1.2億" (120000000) become plain digits (``cn2an``); and a
  short answer of CJK prose around one number ("全年收入为 36000元。") gives
  that number (:func:`number_in_cjk_prose`), unless the prose negates, doubts,
  bounds or conditions it (不, 约, 或, 左右, 至少, 如果, ...).
"""
from __future__ import annotations

import re
import unicodedata
from fractions import Fraction
from functools import lru_cache

# The languages text2num reads, English first (the most common answer language).
WORD_LANGUAGES = ("en", "fr", "es", "de", "pt", "it", "nl")
# Digits in groups: of three ("1,234,567"), or in the Indian way, two then the last three ("12,34,567",
# "1,00,000"; first, so that "1,00,000" is never read as 1 and then ",00"), or joined by underscores as
# Python, Rust and Java write them ("1_000_000").
DIGIT_GROUPS = r"(?:\d{1,2}(?:,\d{2})+,\d{3}|\d{1,3}(?:,\d{3})+|\d{1,3}(?:_\d{3})+)"
_SIGN_WORDS = frozenset({"negative", "minus", "moins", "menos", "negativo", "meno", "min"})
_WORD = re.compile(r"^[^\W\d_]+(?:[\s-]+[^\W\d_]+)*$")
_ROMAN = re.compile(r"^[IVXLCDM]{2,15}$")
_CHINESE_DIGITS = "零〇一二两三四五六七八九十百千万亿壹贰叁肆伍陆柒捌玖拾佰仟点负"
_CHINESE = re.compile(rf"^[{_CHINESE_DIGITS}]+$")
_CHINESE_FRACTION = re.compile(rf"^(负?)([{_CHINESE_DIGITS}]+)分之([{_CHINESE_DIGITS}]+)$")
# Digits followed by a magnitude (万 10^4, 亿 10^8, 千 10^3, Korean 만, 억, 천), possibly several in a row.
_MYRIAD_UNIT = "万萬亿億千만억천"
_MYRIAD = re.compile(rf"(?<![\d.])\d+(?:\.\d+)?[{_MYRIAD_UNIT}](?:\s?\d+(?:\.\d+)?[{_MYRIAD_UNIT}])*(?:\s?\d+(?![\d.]))?")
MYRIAD_UNITS = re.compile(rf"\d[{_MYRIAD_UNIT}]")
_TO_CHINESE = str.maketrans({"萬": "万", "億": "亿", "만": "万", "억": "亿", "천": "千"})
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# Words around a number that make it no plain statement of the answer: negation, doubt, alternatives, bounds,
# conditions, questions.
_CJK_QUALIFIERS = re.compile("不|没|沒|非|无|無|或|约|約|大概|可能|也许|也許|左右|吗|嗎|如果|假设|假設|若|以上|以下|至少|最多|"
                             "超过|超過|[?？]|아니|약|또는|정도|만약|이상|이하|최소|최대|多少")
_CJK_PROSE_NUMBER = re.compile(r"^[^\d\sA-Za-z\\$=]*\s*([+-]?\d+(?:\.\d+)?)\s*[^\d\sA-Za-z\\$=]*$")
_KEYCAP = re.compile("([0-9#*])\ufe0f?\u20e3")  # a digit, the emoji presentation selector, the enclosing keycap
_LOOK_ALIKES = {
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2007": " ",  # spaces used between digit groups
    "\u066b": ".", "\u066c": ",",  # Arabic decimal and thousands separators
}
_DASHES_BEFORE_DIGIT = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d](?=\\d)|"
                                  # a dash opening the answer, spaced from its number ("\u2013 12")
                                  "^\\s*[\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d]\\s+(?=\\d)|"
                                  # APL's high minus (¯7) and a calculator's raised minus (⁻5/3), opening a number
                                  "(?<![\\w)])[\u00af\u207b](?=\\d)")


def _nfkc_range(char: str) -> bool:
    code = ord(char)
    return 0xFF01 <= code <= 0xFF5E or 0x1D400 <= code <= 0x1D7FF


def keycap_digits(text: str) -> str:
    """``text`` with each keycap emoji as its digit ("1️⃣8️⃣ marbles" -> "18 marbles")."""
    return _KEYCAP.sub(r"\1", text).replace("\U0001F51F", "10") if "\u20e3" in text or "\U0001F51F" in text else text


def plain_digits(text: str) -> str:
    """``text`` with the digits and look-alikes listed in the module docstring made ASCII."""
    if text.isascii():
        return text
    text = keycap_digits(text)
    out = []
    for char in text:
        if char in _LOOK_ALIKES:
            out.append(_LOOK_ALIKES[char])
        elif not char.isascii() and unicodedata.category(char) == "Nd":
            out.append(str(unicodedata.decimal(char)))
        elif _nfkc_range(char):
            out.append(unicodedata.normalize("NFKC", char))
        else:
            out.append(char)
    return _DASHES_BEFORE_DIGIT.sub("-", "".join(out))


@lru_cache(maxsize=4096)
def words_to_number(text: str, languages: tuple[str, ...] = WORD_LANGUAGES) -> int | None:
    """The integer that ``text`` spells in one of ``languages`` ("negative twenty-one" -> -21), else ``None``.

    Words after a number ("5 million", "120 miles") are read in English only:
    "miles" is a thousand in Spanish, "cent" a hundred in French.
    """
    words = text.strip().lower().replace(",", " ").split()
    if not words or not _WORD.match(" ".join(words)):
        return None
    sign = 1
    if words[0] in _SIGN_WORDS:
        sign, words = -1, words[1:]
    if not words:
        return None
    from text_to_num import text2num

    phrase = " ".join(words)
    if len(phrase) < 2:  # one letter is no number word (text2num reads "o" as zero): a letter O is no 0
        return None
    for language in languages:
        try:
            return sign * int(text2num(phrase, language))
        except ValueError:
            continue
    return None


def _chinese(text: str) -> Fraction | None:
    import cn2an

    try:
        value = cn2an.cn2an(text, "smart")
    except (ValueError, KeyError, IndexError):
        return None
    return Fraction(str(value))


def chinese_number(text: str) -> tuple[Fraction, bool] | None:
    """``(value, is_percent)`` for a Chinese numeral, fraction or percentage, else ``None``."""
    text = text.strip()
    fraction = _CHINESE_FRACTION.match(text)
    if fraction is not None:
        sign, denominator, numerator = fraction.groups()
        if denominator == "百":  # 百分之二十: twenty per hundred, a percentage
            value = _chinese(numerator)
            return None if value is None else ((-value if sign else value), True)
        den, num = _chinese(denominator), _chinese(numerator)
        if den is None or num is None or den == 0:
            return None
        return (-num / den if sign else num / den), False
    if not _CHINESE.match(text):
        return None
    value = _chinese(text)
    return None if value is None else (value, False)


def myriad_numbers(text: str) -> str:
    """``text`` with each number written with CJK magnitudes in plain digits ("12万" -> "120000")."""
    def plain(match: re.Match) -> str:
        value = _chinese(match.group(0).translate(_TO_CHINESE).replace(" ", ""))
        return match.group(0) if value is None else str(value)

    return _MYRIAD.sub(plain, text)


def number_in_cjk_prose(text: str) -> str | None:
    """The one number of a short answer in CJK prose ("全年收入为 36000元。", "共 2400 人"), else ``None``: not
    when the prose qualifies it (:data:`_CJK_QUALIFIERS`) or holds Latin letters, math or another number."""
    if not _CJK.search(text) or _CJK_QUALIFIERS.search(text):
        return None
    match = _CJK_PROSE_NUMBER.match(text.strip())
    return match.group(1) if match else None


def roman_number(text: str) -> int | None:
    """The value of an upper-case Roman numeral of two or more letters ("XIV" -> 14), else ``None``."""
    if not _ROMAN.match(text):
        return None
    import roman

    try:
        return roman.fromRoman(text)
    except roman.InvalidRomanNumeralError:
        return None

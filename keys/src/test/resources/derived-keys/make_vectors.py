#!/usr/bin/env python3
"""Test vectors for io.github.idemtx.core.DerivedKeys and DownstreamKeys.

This script is the source of truth: it implements the derivation independently of the Java
code, with nothing but the Python standard library, and writes vectors.json next to itself.
DerivedKeysVectorsTest checks every vector byte for byte (material and key). It also writes
unicode-tables.json: Python's casefold(), upper() and NFC of every single character it knows,
against which DerivedUnicodeTablesTest checks ICU4J and the JDK character by character.

Regenerate (from the repository root):

    python3 core/src/test/resources/derived-keys/make_vectors.py

Check that vectors.json is current without writing it:

    python3 core/src/test/resources/derived-keys/make_vectors.py --check

Written for Python 3.11 (Unicode 14.0). Normalisation and case folding are stable for characters
assigned in Unicode 14, so a newer Python gives the same vectors.json (unicode-tables.json grows
with the Unicode version); the script refuses anything older than 3.11.

The algorithm
-------------
Normalisers (each maps one payload value to a str):

    AMOUNT        a str: strip(), then ASCII  [+-]? ( digits [. digits?] | . digits ), no
                  exponent; or an int; or a Decimal (Java BigDecimal). Quantized to 2 places,
                  ROUND_HALF_UP; a zero result is written without sign; at most 100 digits
                  before the point.
    CURRENCY      str.strip().upper()
    CREDITOR_KEY  t = NFC(s).strip(); if t is only ASCII digits and . - / (at least one digit),
                  the digits of t; otherwise t.casefold()
    FREE_TEXT     NFC(s).strip().casefold()

bucket   = created_at_epoch_second // bucket_seconds                (floor division)
material = json.dumps([tenant, action, {field: normalised}, bucket],
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
key      = hmac.new(secret, material, hashlib.sha256).hexdigest()[:key_length]

Only normalised fields enter the material; ignored fields are dropped; any other field, or a
missing normalised field, is an error.

Downstream keys:

    material = json.dumps([scope, key, step], separators=(",", ":"), ensure_ascii=False).encode()
    key      = hmac.new(secret, material, hashlib.sha256).hexdigest()[:length]

Payload values in vectors.json are JSON strings, or one of these wrappers for a non-string Java
value: {"$decimal": "10.004"} (BigDecimal), {"$long": 10} (Long), {"$int": 10} (Integer),
{"$biginteger": "123..."} (BigInteger). vectors.json is written with ensure_ascii=True so that no
editor can re-normalise its text (NFD inputs must stay NFD).
"""

import datetime
import decimal
import hashlib
import hmac
import json
import pathlib
import re
import sys
import unicodedata

if sys.version_info < (3, 11):
    sys.exit("make_vectors.py needs Python 3.11 or newer")

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "vectors.json"
TABLES = HERE / "unicode-tables.json"

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

AMOUNT_PATTERN = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)
DIGITS_AND_SEPARATORS = re.compile(r"[0-9./-]*[0-9][0-9./-]*", re.ASCII)
MAX_AMOUNT_INTEGER_DIGITS = 100


class NormalisationError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------
# the algorithm


def amount(value):
    if isinstance(value, bool):
        raise NormalisationError("AMOUNT does not accept a boolean")
    if isinstance(value, str):
        text = value.strip()
        if not AMOUNT_PATTERN.fullmatch(text):
            raise NormalisationError("AMOUNT must be a plain decimal number")
        number = decimal.Decimal(text)
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise NormalisationError("AMOUNT must be finite")
        number = value
    elif isinstance(value, int):
        number = decimal.Decimal(value)
    else:
        raise NormalisationError("AMOUNT does not accept " + type(value).__name__)
    with decimal.localcontext() as context:
        context.prec = 10_000
        context.Emax = decimal.MAX_EMAX
        context.Emin = decimal.MIN_EMIN
        rounded = number.quantize(decimal.Decimal("0.01"), rounding=decimal.ROUND_HALF_UP)
    if rounded == 0:
        rounded = abs(rounded)  # no "-0.00"
    text = format(rounded, "f")
    if len(text.lstrip("-").split(".")[0]) > MAX_AMOUNT_INTEGER_DIGITS:
        raise NormalisationError("AMOUNT has too many digits")
    return text


def currency(value):
    if not isinstance(value, str):
        raise NormalisationError("CURRENCY needs a str")
    return value.strip().upper()


def creditor_key(value):
    if not isinstance(value, str):
        raise NormalisationError("CREDITOR_KEY needs a str")
    text = unicodedata.normalize("NFC", value).strip()
    if DIGITS_AND_SEPARATORS.fullmatch(text):
        return "".join(c for c in text if "0" <= c <= "9")
    return text.casefold()


def free_text(value):
    if not isinstance(value, str):
        raise NormalisationError("FREE_TEXT needs a str")
    return unicodedata.normalize("NFC", value).strip().casefold()


NORMALISERS = {
    "AMOUNT": amount,
    "CURRENCY": currency,
    "CREDITOR_KEY": creditor_key,
    "FREE_TEXT": free_text,
}


def compact_json(value, sort_keys):
    return json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def epoch_second(created_at):
    moment = datetime.datetime.fromisoformat(created_at)
    return (moment - EPOCH) // datetime.timedelta(seconds=1)


def derive(secret, tenant, action, fields, ignored, payload, created_at, bucket_seconds, key_length):
    unclassified = sorted(name for name in payload if name not in fields and name not in ignored)
    missing = sorted(name for name in fields if name not in payload)
    if unclassified or missing:
        raise NormalisationError("unclassified %r, missing %r" % (unclassified, missing))
    normalised = {name: NORMALISERS[normaliser](payload[name]) for name, normaliser in fields.items()}
    bucket = epoch_second(created_at) // bucket_seconds
    material = compact_json([tenant, action, normalised, bucket], sort_keys=True)
    full = hmac.new(secret, material, hashlib.sha256).hexdigest()
    return normalised, bucket, material, full, full[:key_length]


def downstream(secret, scope, key, step, length):
    material = compact_json([scope, key, step], sort_keys=False)
    full = hmac.new(secret, material, hashlib.sha256).hexdigest()
    return material, full, full[:length]


# ---------------------------------------------------------------------------------------------
# the vectors


def dec(text):
    return {"$decimal": text}


def long(number):
    return {"$long": number}


def integer(number):
    return {"$int": number}


def bigint(number):
    return {"$biginteger": str(number)}


def to_python(value):
    """A vector's payload value as the Python value it stands for."""
    if isinstance(value, str):
        return value
    (kind, raw), = value.items()
    if kind == "$decimal":
        return decimal.Decimal(raw)
    if kind in ("$long", "$int"):
        return int(raw)
    if kind == "$biginteger":
        return int(raw)
    raise ValueError(kind)


SECRET_A = bytes(range(32))
SECRET_B = hashlib.sha256(b"idemtx derived-keys test secret B").digest()
SECRET_C = bytes(range(100, 148))  # 48 bytes

PIX_ACTION = "pix.payment"
PIX_FIELDS = {
    "amount": "AMOUNT",
    "currency": "CURRENCY",
    "creditor": "CREDITOR_KEY",
    "description": "FREE_TEXT",
}
PIX_IGNORED = ["client_note", "trace_id"]
PIX_BASE = {
    "amount": "10",
    "currency": "brl",
    "creditor": "123.456.789-09",
    "description": "Aluguel de maio",
}
TENANT = "tenant-42"
CREATED = "2026-05-09T12:34:56Z"


def pix(name, same_key_as=None, **overrides):
    vector = {
        "name": name,
        "secret_hex": SECRET_A.hex(),
        "tenant": TENANT,
        "action": PIX_ACTION,
        "fields": PIX_FIELDS,
        "ignored": PIX_IGNORED,
        "payload": dict(PIX_BASE),
        "created_at": CREATED,
        "bucket_seconds": 900,
        "key_length": 64,
    }
    for setting in ("secret_hex", "tenant", "action", "fields", "ignored", "created_at", "bucket_seconds",
                    "key_length"):
        if setting in overrides:
            vector[setting] = overrides.pop(setting)
    if "payload" in overrides:
        vector["payload"] = overrides.pop("payload")
    vector["payload"].update(overrides)
    if same_key_as is not None:
        vector["same_key_as"] = same_key_as
    return vector


# code-point order and UTF-16 order differ for these names: U+E000 and U+FF21 sort before the
# supplementary characters by code point, after them by UTF-16 code unit
SUPPLEMENTARY_FIELDS = {
    "\U0001F4B0": "AMOUNT",         # money bag, U+1F4B0 (UTF-16 D83D DCB0)
    "\uE000note": "FREE_TEXT",      # private use, U+E000
    "\uFF21": "CURRENCY",           # fullwidth A, U+FF21
    "\U0001D49C": "FREE_TEXT",      # mathematical script A, U+1D49C (UTF-16 D835 DC9C)
    "plain": "CREDITOR_KEY",
    "\u00e9t\u00e9": "FREE_TEXT",   # "ete" with acute accents, U+00E9
}

DERIVED = [
    pix("basic"),
    pix("amount 10.0", same_key_as="basic", amount="10.0"),
    pix("amount 10.00", same_key_as="basic", amount="10.00"),
    pix("amount as Long 10", same_key_as="basic", amount=long(10)),
    pix("amount as Integer 10", same_key_as="basic", amount=integer(10)),
    pix("amount as BigDecimal 10.004", same_key_as="basic", amount=dec("10.004")),
    pix("amount with surrounding spaces", same_key_as="basic", amount=" 10.00\u00a0"),
    pix("amount 10.005 rounds half up", amount="10.005"),
    pix("amount 0.015 rounds half up", amount="0.015"),
    pix("amount 1234567.891", amount="1234567.891"),
    pix("amount as BigDecimal 1E+3", amount=dec("1E+3")),
    pix("amount as BigInteger", amount=bigint(12345678901234567890123)),
    pix("amount -0.001 is unsigned zero", amount="-0.001"),
    pix("amount -10.005 rounds away from zero", amount="-10.005"),
    pix("currency is trimmed and upper-cased", same_key_as="basic", currency=" Brl\u3000"),
    pix("CPF digits only", same_key_as="basic", creditor="12345678909"),
    pix("CPF with spaces around", same_key_as="basic", creditor="\u00a0 123.456.789-09\t"),
    pix("CNPJ", creditor="12.345.678/0001-95"),
    pix("creditor e-mail is case-folded", creditor=" Fulano.Silva@Example.COM "),
    pix("creditor e-mail folded form", same_key_as="creditor e-mail is case-folded",
        creditor="fulano.silva@example.com"),
    pix("creditor phone keeps its plus and spaces", creditor="+55 (11) 91234-5678"),
    pix("creditor letters and dots", creditor="ABC.123-X"),
    pix("description case-folded", same_key_as="basic", description="ALUGUEL DE MAIO"),
    pix("sharp s", description="Stra\u00dfe"),
    pix("sharp s folds to ss", same_key_as="sharp s", description="STRASSE"),
    pix("capital sharp s", same_key_as="sharp s", description="STRA\u1e9eE"),
    pix("Turkish dotted capital I", description="D\u0130YARBAKIR"),
    pix("Turkish dotless i", description="I\u011fd\u0131r"),
    pix("Greek final sigma", description="\u039f\u0394\u039f\u03a3"),
    pix("Greek final sigma lower", same_key_as="Greek final sigma", description="\u03bf\u03b4\u03bf\u03c2"),
    pix("ligature fi", description="\ufb01nan\u00e7as"),
    pix("ligature fi folded", same_key_as="ligature fi", description="FINAN\u00c7AS"),
    pix("NFC e acute", description="caf\u00e9"),
    pix("NFD e acute", same_key_as="NFC e acute", description="cafe\u0301"),
    pix("NBSP and ideographic space trimmed", same_key_as="basic",
        description="\u00a0\u3000 Aluguel de maio\u2003\u00a0\n"),
    pix("inner NBSP kept", description="Aluguel\u00a0de maio"),
    pix("zero width space is not trimmed", description="\u200bAluguel de maio"),
    pix("emoji in value", description="Pagamento \U0001F389 \U0001F1E7\U0001F1F7"),
    pix("quotes backslashes and controls", description='He said "hi" \\ C:\\path\x00\x01\x08\x0c\x1f\x7f\u2028\u2029 end'),
    pix("tab and newline inside", description="line one\tcol\nline two\r\n..."),
    pix("ignored fields present", same_key_as="basic",
        client_note="anything \U0001F600", trace_id="7f3c"),
    pix("truncated to 40", same_key_as="basic", key_length=40),
    pix("truncated to 16", same_key_as="basic", key_length=16),
    pix("same bucket later", same_key_as="basic", created_at="2026-05-09T12:44:59.999999999+00:00"),
    pix("next bucket", created_at="2026-05-09T12:45:00Z"),
    pix("before the epoch", created_at="1969-12-31T23:59:59.500000+00:00"),
    pix("one-second buckets", bucket_seconds=1),
    pix("one-year buckets", bucket_seconds=365 * 24 * 3600),
    pix("secret of 48 bytes", secret_hex=SECRET_C.hex()),
    pix("other secret", secret_hex=SECRET_B.hex()),
    pix("tenant with non-ASCII and emoji", tenant="Lojas \u00d1and\u00fa \U0001F6D2"),
    pix("action with non-ASCII", action="pagamento.cr\u00e9dito"),
    {
        "name": "supplementary field names sort by code point",
        "secret_hex": SECRET_B.hex(),
        "tenant": "t\U0001F600",
        "action": "sort-check",
        "fields": SUPPLEMENTARY_FIELDS,
        "ignored": ["\U0001F600ignored"],
        "payload": {
            "\U0001D49C": "\U0001D4D0 script \U0001F600",
            "plain": "\U0001F511-Key",
            "\uE000note": "private \uE000 use",
            "\U0001F4B0": "99.999",
            "\u00e9t\u00e9": "\u00c9T\u00c9",
            "\uFF21": "xau",
            "\U0001F600ignored": "dropped",
        },
        "created_at": "2030-01-01T00:00:00Z",
        "bucket_seconds": 3600,
        "key_length": 40,
    },
]

NORMALISER_CASES = [
    ("AMOUNT", "10"), ("AMOUNT", "10.0"), ("AMOUNT", "10.00"), ("AMOUNT", long(10)), ("AMOUNT", dec("10.004")),
    ("AMOUNT", "10.005"), ("AMOUNT", "0.015"), ("AMOUNT", "1234567.891"), ("AMOUNT", "0"), ("AMOUNT", "-0"),
    ("AMOUNT", "-0.004"), ("AMOUNT", "-0.005"), ("AMOUNT", "+7"), ("AMOUNT", ".5"), ("AMOUNT", "5."),
    ("AMOUNT", "+.5"), ("AMOUNT", "-5."), ("AMOUNT", "-.125"),
    ("AMOUNT", "007.10"), ("AMOUNT", " 1.999 "), ("AMOUNT", "0.994"), ("AMOUNT", "0.995"),
    ("AMOUNT", dec("1E+3")), ("AMOUNT", dec("-2.5E-3")), ("AMOUNT", dec("1E-1000")), ("AMOUNT", dec("-0E+5")),
    ("AMOUNT", dec("123.456789012345678901234567890")), ("AMOUNT", integer(-42)),
    ("AMOUNT", bigint(-98765432109876543210)), ("AMOUNT", "9" * 100), ("AMOUNT", "9" * 100 + ".994"),
    ("CURRENCY", "brl"), ("CURRENCY", " usd\u3000"), ("CURRENCY", "Eur"), ("CURRENCY", "\u00dfx"),
    ("CREDITOR_KEY", "123.456.789-09"), ("CREDITOR_KEY", "12.345.678/0001-95"), ("CREDITOR_KEY", " 12345678909 "),
    ("CREDITOR_KEY", "1/2-3.4"), ("CREDITOR_KEY", "..."), ("CREDITOR_KEY", "-"), ("CREDITOR_KEY", ""),
    ("CREDITOR_KEY", "123 456"), ("CREDITOR_KEY", "+5511912345678"), ("CREDITOR_KEY", "Fulano@Example.COM"),
    ("CREDITOR_KEY", "\u0661\u0662\u0663"), ("CREDITOR_KEY", "\uff11\uff12\uff13"),
    ("CREDITOR_KEY", "STRASSE-Stra\u00dfe"), ("CREDITOR_KEY", "cafe\u0301"),
    ("CREDITOR_KEY", "123e4567-E89B-12D3-A456-426614174000"),
    ("FREE_TEXT", "Stra\u00dfe"), ("FREE_TEXT", "D\u0130YARBAKIR"), ("FREE_TEXT", "I\u011fd\u0131r"),
    ("FREE_TEXT", "\u039f\u0394\u039f\u03a3"), ("FREE_TEXT", "\u03bf\u03b4\u03bf\u03c2"), ("FREE_TEXT", "\ufb01"),
    ("FREE_TEXT", "\ufb03"), ("FREE_TEXT", "cafe\u0301"), ("FREE_TEXT", "CAFE\u0301"), ("FREE_TEXT", "\u212b"),
    ("FREE_TEXT", "\u00a0x\u3000"), ("FREE_TEXT", "\u1680\u2000\u200a x \u2028\u2029\u202f\u205f\x1c\x1f\x85"),
    ("FREE_TEXT", "\u200bx\u200b"), ("FREE_TEXT", "\ufeffx\ufeff"), ("FREE_TEXT", "\u180ex\u180e"),
    ("FREE_TEXT", ""), ("FREE_TEXT", "   "), ("FREE_TEXT", "\U0001F600 \U00010400\U0001E900"),
    ("FREE_TEXT", "\u13a0\uab70"), ("FREE_TEXT", "\u0149"), ("FREE_TEXT", "\u1f88"), ("FREE_TEXT", "\u0345"),
    ("FREE_TEXT", "\u03d0\u03f4\u1e9b"), ("FREE_TEXT", "K\u212a\u00b5"), ("FREE_TEXT", 'q"\\\x00'),
]

AMOUNT_ERRORS = [
    "", " ", "abc", "1e3", "1E3", "1.5e2", "10,00", "1,000.00", "1_000", "--1", "+-1", "1.2.3", ".", "+",
    "0x10", "NaN", "nan", "Infinity", "-Infinity", "\u0661\u0660", "\uff11\uff10", "10 00", "$10",
    "9" * 101, "9" * 100 + ".995",
]
TEXT_ERRORS = [("CURRENCY", long(1)), ("CREDITOR_KEY", long(12345678909)),
               ("FREE_TEXT", dec("1.5"))]


def normaliser_vectors():
    vectors = []
    for normaliser, value in NORMALISER_CASES:
        vectors.append({"normaliser": normaliser, "input": value,
                        "output": NORMALISERS[normaliser](to_python(value))})
    return vectors


def error_vectors():
    vectors = []
    for value in AMOUNT_ERRORS:
        try:
            amount(value)
        except NormalisationError:
            vectors.append({"normaliser": "AMOUNT", "input": value})
        else:
            raise AssertionError("AMOUNT accepted %r" % value)
    for normaliser, value in TEXT_ERRORS:
        try:
            NORMALISERS[normaliser](to_python(value))
        except NormalisationError:
            vectors.append({"normaliser": normaliser, "input": value})
        else:
            raise AssertionError("%s accepted %r" % (normaliser, value))
    return vectors


def derived_vectors():
    results = {}
    vectors = []
    for vector in DERIVED:
        payload = {name: to_python(value) for name, value in vector["payload"].items()}
        normalised, bucket, material, full, key = derive(
            bytes.fromhex(vector["secret_hex"]), vector["tenant"], vector["action"], vector["fields"],
            vector["ignored"], payload, vector["created_at"], vector["bucket_seconds"], vector["key_length"])
        if "same_key_as" in vector and results[vector["same_key_as"]] != full:
            raise AssertionError("%s: expected the same key as %s" % (vector["name"], vector["same_key_as"]))
        if vector["name"] in results:
            raise AssertionError("duplicate vector name " + vector["name"])
        results[vector["name"]] = full
        vectors.append(dict(vector, normalised=normalised, bucket=bucket, material_hex=material.hex(),
                            full_key=full, key=key))
    if len(set(results.values())) != len({v.get("same_key_as", v["name"]) for v in DERIVED}):
        raise AssertionError("two vectors meant to differ have the same key")
    return vectors


DOWNSTREAM = [
    ("basic", SECRET_A, "tenant-42", "3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a11", "charge-card", 32),
    ("other step", SECRET_A, "tenant-42", "3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a11", "send-receipt", 32),
    ("other key", SECRET_A, "tenant-42", "3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a12", "charge-card", 32),
    ("other scope", SECRET_A, "tenant-43", "3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a11", "charge-card", 32),
    ("length 16", SECRET_A, "tenant-42", "3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a11", "charge-card", 16),
    ("length 40", SECRET_A, "tenant-42", "3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a11", "charge-card", 40),
    ("length 64", SECRET_A, "tenant-42", "3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a11", "charge-card", 64),
    ("quotes and backslash in key", SECRET_B, "Lojas \u00d1and\u00fa \U0001F6D2", 'k"e\\y', "pix:pay/1", 32),
    ("non-ASCII step", SECRET_C, "t", "k", "cobran\u00e7a \U0001F4B3", 48),
]


def downstream_vectors():
    vectors = []
    for name, secret, scope, key, step, length in DOWNSTREAM:
        material, full, short = downstream(secret, scope, key, step, length)
        vectors.append({"name": name, "secret_hex": secret.hex(), "scope": scope, "key": key, "step": step,
                        "length": length, "material_hex": material.hex(), "full_key": full, "downstream_key": short})
    return vectors


def build():
    return {
        "comment": "Generated by make_vectors.py (the source of truth); do not edit by hand.",
        "python_isspace": [c for c in range(0x110000) if chr(c).isspace()],
        "normalisers": normaliser_vectors(),
        "normaliser_errors": error_vectors(),
        "derived": derived_vectors(),
        "downstream": downstream_vectors(),
    }


def code_points(text):
    return " ".join("%04X" % ord(c) for c in text)


def unicode_tables():
    """Python's per-character casefold(), upper() and NFC, wherever they change the character.

    Lets the Java test compare ICU4J's folding and normalisation (and the JDK's upper-casing)
    with Python's for every character Python knows, not just the ones in the vectors.
    """
    assigned = []
    casefold, upper, nfc = {}, {}, {}
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        if unicodedata.category(ch) == "Cn":
            continue
        if assigned and assigned[-1][1] == c - 1:
            assigned[-1][1] = c
        else:
            assigned.append([c, c])
        for table, mapped in ((casefold, ch.casefold()), (upper, ch.upper()), (nfc, unicodedata.normalize("NFC", ch))):
            if mapped != ch:
                table["%04X" % c] = code_points(mapped)
    return {
        "comment": "Generated by make_vectors.py from Python's own Unicode data; do not edit by hand.",
        "unicode_version": unicodedata.unidata_version,
        "assigned": assigned,
        "casefold": casefold,
        "upper": upper,
        "nfc": nfc,
    }


def main():
    outputs = {
        OUT: json.dumps(build(), indent=1, ensure_ascii=True) + "\n",
        TABLES: json.dumps(unicode_tables(), indent=0, ensure_ascii=True) + "\n",
    }
    if sys.argv[1:] == ["--check"]:
        stale = [path.name for path, text in outputs.items()
                 if not path.exists() or path.read_text(encoding="ascii") != text]
        if stale:
            sys.exit("out of date: %s; run make_vectors.py" % ", ".join(stale))
        print("vectors.json and unicode-tables.json are current")
        return
    for path, text in outputs.items():
        path.write_text(text, encoding="ascii")
        print("wrote", path)


if __name__ == "__main__":
    main()

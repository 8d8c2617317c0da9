/*
 * The record scanners (json, csv, and protobuf and avro below): a batch of values (an Arrow
 * binary array's buffers) into Arrow buffers of a flat table's columns (json: also nested ones,
 * see scan_nested), one pass over the bytes, no Python objects per record.
 *
 * json: it decodes a record only when the result is certainly the one Flink's JSON format gives, and
 * otherwise leaves the whole record undecoded (its bit in the returned bitmap is 0) for the
 * broader decodings after it: a value that is not exactly one JSON object, malformed JSON
 * anywhere in it (also in fields the table does not declare), invalid UTF-8, a declared field
 * given twice, a key with escapes, or a declared field whose JSON value is not of the one kind
 * this scanner converts for its column:
 *
 *   's' STRING (and temporal text): a JSON string, its unescaped UTF-8 content; for STRING, a
 *       number, true or false as its JSON text, as written (what Flink keeps)
 *   'b' BOOLEAN: true / false (values as a bitmap, as Arrow's)
 *   'B' 'H' 'I' 'L' TINYINT..BIGINT: an integer without fraction or exponent, within range,
 *       or a string of a sign and digits (Flink parses a string's text)
 *   'd' DOUBLE, 'f' FLOAT: a JSON number, correctly rounded (no overflow, no underflow), or a
 *       string whose content is such a number
 *   'm' DECIMAL(p, s): a number without exponent whose digits fit p and s exactly, or a string
 *       whose content is such a number
 *   'D' DATE: a string yyyy-MM-dd naming a day (days since 1970-01-01)
 *   'C' TIME: a string HH:mm:ss[.fraction] naming a time of day, kept as text
 *   't' 'T' TIMESTAMP, 'z' 'Z' TIMESTAMP_LTZ: a string of timestamp-format.standard's shape
 *       (t, z: SQL "yyyy-MM-dd HH:mm:ss[.fraction]"; T, Z: ISO-8601 "yyyy-MM-ddTHH:mm[:ss[.f]]";
 *       z, Z end with "Z", UTC) naming a time (microseconds since the epoch, digits past the
 *       microsecond dropped)
 *
 * A JSON null, or a field the record does not have, is a null value.
 *
 * csv: a record of exactly the table's number of fields, split at the field delimiter, each
 * field plain or wholly quoted (a doubled quote inside is one quote). It leaves a record with a
 * line break or a control character inside, the escape character, a quote character inside an
 * unquoted field, invalid UTF-8, a comment, or a field whose text is not in the canonical form
 * of its column's kind (the same kinds as above, read from text: a sign and digits, a JSON
 * number, true or false; TIMESTAMP_LTZ with or without its "Z"). A field equal to the null
 * literal is a null value. One trailing line break is not part of the record.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLUMNS 64
#define MAX_DEPTH 200
#define MAX_NUMBER 200

typedef struct {
    char *data;
    Py_ssize_t used, capacity;
} Buffer;

/* An enum value's name (protobuf: an enum field into a text column). */
typedef struct {
    int32_t number;
    const char *name;
    Py_ssize_t length;
} EnumName;

typedef struct {
    char kind;
    int width;          /* bytes per value of fixed-width kinds (0: text, or a bitmap) */
    int precision, scale;
    const char *name;
    Py_ssize_t name_len;
    /* protobuf: null when its field is unset (else the type's default), enum names */
    int unset_null;
    EnumName *enum_names;
    int n_enum_names;
    /* avro: a union of null and the type */
    int nullable;
    /* output */
    uint8_t *valid;     /* bitmap, LSB first */
    char *values;       /* fixed width: length * width; booleans: a bitmap */
    int32_t *offsets;   /* text kinds: length + 1 */
    Buffer text;        /* text kinds: the bytes; temporal kinds: the value's text, scratch */
} Column;

static inline int is_text(char kind) { return kind == 's' || kind == 'C' || kind == 'y'; }

typedef struct {
    const uint8_t *p, *end;
} Cursor;

/* Character classes for the string fast path: 1 = ends a plain run ('"', '\\', non-ASCII); raw
 * control characters are content, as Flink's JSON reader takes them. */
static uint8_t SPECIAL[256];
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static inline void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

static inline void set_bit(uint8_t *bits, Py_ssize_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void clear_bit(uint8_t *bits, Py_ssize_t i) {
    bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

/* One UTF-8 sequence starting at a byte >= 0x80: its length, or 0 when it is not valid UTF-8. */
static inline int utf8_sequence(const uint8_t *p, const uint8_t *end) {
    uint8_t b = p[0];
    Py_ssize_t left = end - p;
    if (b >= 0xC2 && b <= 0xDF)
        return (left >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    if (b >= 0xE0 && b <= 0xEF) {
        if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        if (b == 0xE0 && p[1] < 0xA0)
            return 0; /* overlong */
        if (b == 0xED && p[1] > 0x9F)
            return 0; /* a surrogate */
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        if (b == 0xF0 && p[1] < 0x90)
            return 0; /* overlong */
        if (b == 0xF4 && p[1] > 0x8F)
            return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

static inline int hex4(const uint8_t *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9')
            v |= (uint32_t)(h - '0');
        else if (h >= 'a' && h <= 'f')
            v |= (uint32_t)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F')
            v |= (uint32_t)(h - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static int reserve(Buffer *b, Py_ssize_t more) {
    if (b->used + more <= b->capacity)
        return 0;
    Py_ssize_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->used + more)
        capacity *= 2;
    char *grown = realloc(b->data, (size_t)capacity);
    if (grown == NULL)
        return -2;
    b->data = grown;
    b->capacity = capacity;
    return 0;
}

/*
 * A JSON string at c->p (just after its opening quote). With col, its unescaped content is
 * appended to that buffer. Returns 0, -1 when the record is left undecoded, -2 out of memory.
 * Lone surrogate escapes are accepted only when the content is not kept. Raw control characters
 * are content, as Flink's JSON reader (Jackson with ALLOW_UNESCAPED_CONTROL_CHARS) takes them.
 */
static int scan_string(Cursor *c, Buffer *col) {
    const uint8_t *p = c->p, *end = c->end;
    for (;;) {
        const uint8_t *run = p;
        while (p < end && !SPECIAL[*p])
            p++;
        if (col != NULL && p > run) {
            if (reserve(col, p - run) < 0)
                return -2;
            memcpy(col->data + col->used, run, (size_t)(p - run));
            col->used += p - run;
        }
        if (p >= end)
            return -1;
        uint8_t b = *p;
        if (b == '"') {
            c->p = p + 1;
            return 0;
        }
        if (b >= 0x80) {
            int n = utf8_sequence(p, end);
            if (n == 0)
                return -1;
            if (col != NULL) {
                if (reserve(col, n) < 0)
                    return -2;
                memcpy(col->data + col->used, p, (size_t)n);
                col->used += n;
            }
            p += n;
            continue;
        }
        /* a backslash */
        if (end - p < 2)
            return -1;
        char out = 0;
        switch (p[1]) {
        case '"': out = '"'; break;
        case '\\': out = '\\'; break;
        case '/': out = '/'; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case 'n': out = '\n'; break;
        case 'r': out = '\r'; break;
        case 't': out = '\t'; break;
        case 'u': break;
        default: return -1;
        }
        if (out != 0) {
            if (col != NULL) {
                if (reserve(col, 1) < 0)
                    return -2;
                col->data[col->used++] = out;
            }
            p += 2;
            continue;
        }
        uint32_t code;
        if (end - p < 6 || hex4(p + 2, &code) < 0)
            return -1;
        p += 6;
        if (code >= 0xD800 && code <= 0xDFFF) {
            uint32_t low;
            if (code <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                hex4(p + 2, &low) == 0 && low >= 0xDC00 && low <= 0xDFFF) {
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
            } else if (col != NULL) {
                return -1; /* a lone surrogate: no UTF-8 for it */
            } else {
                continue;
            }
        }
        if (col == NULL)
            continue;
        if (reserve(col, 4) < 0)
            return -2;
        char *o = col->data + col->used;
        if (code < 0x80) {
            o[0] = (char)code;
            col->used += 1;
        } else if (code < 0x800) {
            o[0] = (char)(0xC0 | (code >> 6));
            o[1] = (char)(0x80 | (code & 0x3F));
            col->used += 2;
        } else if (code < 0x10000) {
            o[0] = (char)(0xE0 | (code >> 12));
            o[1] = (char)(0x80 | ((code >> 6) & 0x3F));
            o[2] = (char)(0x80 | (code & 0x3F));
            col->used += 3;
        } else {
            o[0] = (char)(0xF0 | (code >> 18));
            o[1] = (char)(0x80 | ((code >> 12) & 0x3F));
            o[2] = (char)(0x80 | ((code >> 6) & 0x3F));
            o[3] = (char)(0x80 | (code & 0x3F));
            col->used += 4;
        }
    }
}

/* A JSON number's parts, as its grammar defines it. */
typedef struct {
    const uint8_t *start, *end;
    int negative;
    const uint8_t *int_digits, *frac_digits; /* frac_digits NULL without a fraction */
    int n_int, n_frac;
    int has_exponent;
    long exponent;
} Number;

/* The exponent of a number at *pp (its 'e' or 'E'), capped at 100000 in magnitude: 0 with *pp
 * after it, -1 without digits. */
static int scan_exponent(const uint8_t **pp, const uint8_t *end, Number *n) {
    const uint8_t *p = *pp + 1;
    int negative = 0;
    if (p < end && (*p == '+' || *p == '-'))
        negative = *p++ == '-';
    const uint8_t *digits = p;
    while (p < end && *p >= '0' && *p <= '9') {
        if (n->exponent < 100000)
            n->exponent = n->exponent * 10 + (*p - '0');
        p++;
    }
    if (p == digits)
        return -1;
    n->has_exponent = 1;
    if (negative)
        n->exponent = -n->exponent;
    *pp = p;
    return 0;
}

static int scan_number(Cursor *c, Number *n) {
    const uint8_t *p = c->p, *end = c->end;
    n->start = p;
    n->negative = 0;
    n->frac_digits = NULL;
    n->n_frac = 0;
    n->has_exponent = 0;
    n->exponent = 0;
    if (p < end && *p == '-') {
        n->negative = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return -1;
    n->int_digits = p;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    n->n_int = (int)(p - n->int_digits);
    if (p < end && *p == '.') {
        p++;
        n->frac_digits = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        n->n_frac = (int)(p - n->frac_digits);
        if (n->n_frac == 0)
            return -1;
    }
    if (p < end && (*p == 'e' || *p == 'E') && scan_exponent(&p, end, n) < 0)
        return -1;
    n->end = p;
    c->p = p;
    return 0;
}

/* Appends the decimal digits [q, end) to a mantissa, stopping once it has more than 15
 * significant digits. */
static void add_digits(const uint8_t *q, const uint8_t *end, uint64_t *mantissa, int *digits) {
    for (; q < end && *digits <= 15; q++) {
        if (*mantissa || *q != '0')
            (*digits)++;
        *mantissa = *mantissa * 10 + (uint64_t)(*q - '0');
    }
}

/* A number's whole text as strtod (strtof with as_float) reads it, errno as that leaves it; the
 * text is copied to the stack, or to the heap when long (plain malloc: the passes run without
 * the GIL). 0, or -2 out of memory. */
static int number_strtod(const Number *n, int as_float, double *out) {
    Py_ssize_t length = n->end - n->start;
    char small[MAX_NUMBER];
    char *text = length < MAX_NUMBER ? small : malloc((size_t)length + 1);
    if (text == NULL)
        return -2;
    memcpy(text, n->start, (size_t)length);
    text[length] = '\0';
    errno = 0;
    *out = as_float ? (double)strtof(text, NULL) : strtod(text, NULL);
    int error = errno;
    if (text != small)
        free(text);
    errno = error;
    return 0;
}

/* A number's value as a double (or, with as_float, a float), correctly rounded; -1 when it
 * overflows or underflows (left to the other decodings). */
static int number_double(const Number *n, int as_float, double *out) {
    if (!as_float) {
        /* Exact fast path: up to 15 significant digits and a power of ten up to 22. */
        uint64_t mantissa = 0;
        int digits = 0;
        add_digits(n->int_digits, n->int_digits + n->n_int, &mantissa, &digits);
        if (n->frac_digits != NULL)
            add_digits(n->frac_digits, n->frac_digits + n->n_frac, &mantissa, &digits);
        if (digits <= 15) {
            long power = n->exponent - n->n_frac;
            if (power >= -22 && power <= 22) {
                double value = (double)mantissa;
                value = power < 0 ? value / POW10[-power] : value * POW10[power];
                *out = n->negative ? -value : value;
                return 0;
            }
        }
    }
    if (n->end - n->start >= MAX_NUMBER)
        return -1;
    double value;
    number_strtod(n, as_float, &value); /* a short text: on the stack, it cannot fail */
    if (errno == ERANGE || !isfinite(value))
        return -1;
    *out = value;
    return 0;
}

/* After a member of an object or array: 1 when another follows (its comma passed), 0 at the
 * closing bracket (passed), -1 otherwise. */
static int next_member(Cursor *c, uint8_t close) {
    skip_ws(c);
    if (c->p >= c->end)
        return -1;
    if (*c->p == ',') {
        c->p++;
        skip_ws(c);
        return 1;
    }
    if (*c->p == close) {
        c->p++;
        return 0;
    }
    return -1;
}

static int skip_value(Cursor *c, int depth);

static int skip_container(Cursor *c, int depth, uint8_t close) {
    if (depth > MAX_DEPTH)
        return -1;
    c->p++; /* the opening bracket */
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            if (c->p >= c->end || *c->p != '"')
                return -1;
            c->p++;
            int r = scan_string(c, NULL);
            if (r < 0)
                return r;
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':')
                return -1;
            c->p++;
            skip_ws(c);
        }
        int r = skip_value(c, depth + 1);
        if (r < 0)
            return r;
        r = next_member(c, close);
        if (r <= 0)
            return r;
    }
}

static inline int literal(Cursor *c, const char *word, Py_ssize_t length) {
    if (c->end - c->p < length || memcmp(c->p, word, (size_t)length) != 0)
        return -1;
    c->p += length;
    return 0;
}

/* Any JSON value, validated and not kept. */
static int skip_value(Cursor *c, int depth) {
    if (c->p >= c->end)
        return -1;
    switch (*c->p) {
    case '"':
        c->p++;
        return scan_string(c, NULL);
    case '{':
        return skip_container(c, depth, '}');
    case '[':
        return skip_container(c, depth, ']');
    case 't':
        return literal(c, "true", 4);
    case 'f':
        return literal(c, "false", 5);
    case 'n':
        return literal(c, "null", 4);
    default: {
        Number n;
        return scan_number(c, &n);
    }
    }
}

static int integer_value(const Number *n, char kind, int64_t *out) {
    if (n->frac_digits != NULL || n->has_exponent || n->n_int > 19)
        return -1;
    uint64_t magnitude = 0;
    for (const uint8_t *q = n->int_digits; q < n->int_digits + n->n_int; q++)
        magnitude = magnitude * 10 + (uint64_t)(*q - '0'); /* at most 19 digits: no overflow */
    int64_t low, high;
    switch (kind) {
    case 'B': low = INT8_MIN; high = INT8_MAX; break;
    case 'H': low = INT16_MIN; high = INT16_MAX; break;
    case 'I': low = INT32_MIN; high = INT32_MAX; break;
    default: low = INT64_MIN; high = INT64_MAX; break;
    }
    if (n->negative) {
        if (magnitude > (uint64_t)INT64_MAX + 1 || -(int64_t)(magnitude - 1) - 1 < low)
            return -1;
        *out = magnitude == 0 ? 0 : -(int64_t)(magnitude - 1) - 1;
    } else {
        if (magnitude > (uint64_t)high)
            return -1;
        *out = (int64_t)magnitude;
    }
    (void)low;
    return 0;
}

/* DECIMAL(p, s): the unscaled value as a 128-bit two's complement integer, little endian. */
static int decimal_value(const Number *n, int precision, int scale, char *out) {
    if (n->has_exponent)
        return -1;
    const uint8_t *digits = n->int_digits;
    int n_int = n->n_int;
    while (n_int > 0 && *digits == '0') { /* "0" */
        digits++;
        n_int--;
    }
    int n_frac = n->n_frac;
    while (n_frac > scale && n->frac_digits[n_frac - 1] == '0')
        n_frac--; /* zeros past the scale change nothing */
    if (n_frac > scale || n_int > precision - scale)
        return -1; /* needs rounding, or does not fit */
    __int128 value = 0;
    for (int i = 0; i < n_int; i++)
        value = value * 10 + (digits[i] - '0');
    for (int i = 0; i < scale; i++)
        value = value * 10 + (i < n_frac ? n->frac_digits[i] - '0' : 0);
    if (n->negative)
        value = -value;
    memcpy(out, &value, 16);
    return 0;
}

static inline int digits(const char *p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

static inline int leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* yyyy-MM-dd at p (exactly 10 characters): days since the epoch, or -1. */
static int parse_date(const char *p, int64_t *days) {
    static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d;
    if (p[4] != '-' || p[7] != '-' || digits(p, 4, &y) || digits(p + 5, 2, &m) ||
        digits(p + 8, 2, &d))
        return -1;
    if (y < 1 || m < 1 || m > 12 || d < 1 || d > month_days[m - 1] + (m == 2 && leap(y)))
        return -1;
    *days = days_from_civil(y, m, d);
    return 0;
}

/* HH:mm:ss[.f{1,9}] at p, n characters: microseconds of the day (with seconds optional when
 * `seconds_optional`, as "HH:mm"), or -1 when it has another shape or names no time. */
static int parse_clock(const char *p, Py_ssize_t n, int seconds_optional, int64_t *micros) {
    int h, m, sec = 0;
    if (n < 5 || p[2] != ':' || digits(p, 2, &h) || digits(p + 3, 2, &m))
        return -1;
    Py_ssize_t i = 5;
    int64_t fraction = 0;
    if (n > 5 || !seconds_optional) {
        if (n < 8 || p[5] != ':' || digits(p + 6, 2, &sec))
            return -1;
        i = 8;
        if (i < n) {
            if (p[i] != '.' || n - i - 1 < 1 || n - i - 1 > 9)
                return -1;
            for (Py_ssize_t k = i + 1; k < n; k++) {
                if (p[k] < '0' || p[k] > '9')
                    return -1;
                if (k - i <= 6)
                    fraction = fraction * 10 + (p[k] - '0');
            }
            for (Py_ssize_t k = n - i - 1; k < 6; k++)
                fraction *= 10;
            i = n;
        }
    }
    if (i != n || h > 23 || m > 59 || sec > 59)
        return -1;
    *micros = ((int64_t)h * 3600 + m * 60 + sec) * 1000000 + fraction;
    return 0;
}

/* A temporal kind's text (its string's content) into its value; -1 when it is not one. */
static int temporal_value(char kind, const char *p, Py_ssize_t n, int64_t *out) {
    if (kind == 'D') {
        if (n != 10)
            return -1;
        return parse_date(p, out);
    }
    if (kind == 'C') { /* TIME: the shape and the range only, the text is the value */
        int h, m, sec;
        if (n < 8 || p[2] != ':' || p[5] != ':' || digits(p, 2, &h) || digits(p + 3, 2, &m) ||
            digits(p + 6, 2, &sec) || h > 23 || m > 59 || sec > 59)
            return -1;
        if (n == 8)
            return 0;
        if (p[8] != '.' || n - 9 < 1 || n - 9 > 9)
            return -1;
        for (Py_ssize_t k = 9; k < n; k++)
            if (p[k] < '0' || p[k] > '9')
                return -1;
        return 0;
    }
    int zoned = kind == 'z' || kind == 'Z';
    int iso = kind == 'T' || kind == 'Z';
    if (zoned) {
        if (n < 1 || p[n - 1] != 'Z')
            return -1;
        n--;
    }
    if (n < 16 || p[10] != (iso ? 'T' : ' '))
        return -1;
    int64_t days, micros;
    if (parse_date(p, &days) < 0 || parse_clock(p + 11, n - 11, iso, &micros) < 0)
        return -1;
    *out = days * 86400000000LL + micros;
    return 0;
}

/* A number into row `row` of a numeric column: -1 when it does not convert exactly. */
static int store_number(Column *col, const Number *n, Py_ssize_t row) {
    char *slot = col->values + row * col->width;
    if (col->kind == 'd' || col->kind == 'f') {
        double value;
        if (number_double(n, col->kind == 'f', &value) < 0)
            return -1;
        if (col->kind == 'f') {
            float f = (float)value;
            memcpy(slot, &f, 4);
        } else {
            memcpy(slot, &value, 8);
        }
        return 0;
    }
    if (col->kind == 'm')
        return decimal_value(n, col->precision, col->scale, slot);
    int64_t value;
    if (integer_value(n, col->kind, &value) < 0)
        return -1;
    switch (col->width) {
    case 1: { int8_t v = (int8_t)value; memcpy(slot, &v, 1); break; }
    case 2: { int16_t v = (int16_t)value; memcpy(slot, &v, 2); break; }
    case 4: { int32_t v = (int32_t)value; memcpy(slot, &v, 4); break; }
    default: memcpy(slot, &value, 8); break;
    }
    return 0;
}

/* A temporal text into row `row` of `col` (kind as temporal_value reads it; TIME keeps its text
 * in the column's bytes, so only its shape is checked here). */
static int store_temporal(Column *col, char kind, const char *p, Py_ssize_t n, Py_ssize_t row) {
    int64_t value;
    if (temporal_value(kind, p, n, &value) < 0)
        return -1;
    if (kind == 'D') {
        int32_t days = (int32_t)value;
        memcpy(col->values + row * 4, &days, 4);
    } else if (kind != 'C') {
        memcpy(col->values + row * 8, &value, 8);
    }
    return 0;
}

/* A whole text [p, p + n) as the one JSON number it must be. */
static int text_number(const uint8_t *p, Py_ssize_t n, Number *number) {
    Cursor c = {p, p + n};
    if (scan_number(&c, number) < 0 || c.p != c.end)
        return -1;
    return 0;
}

/* An integer's text [p, p + n) into row `row` of an integer column, as Java's parseInt reads a
 * text without blanks around it (Flink's reading of a JSON string or a CSV field): a sign,
 * digits (leading zeros allowed), within the column's range; -1 otherwise. */
static int integer_text(Column *col, const uint8_t *p, Py_ssize_t n, Py_ssize_t row) {
    Number number = {0};
    if (n > 0 && (p[0] == '-' || p[0] == '+')) {
        number.negative = p[0] == '-';
        p++;
        n--;
    }
    if (n < 1)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return -1;
    while (n > 1 && *p == '0') { /* leading zeros change nothing */
        p++;
        n--;
    }
    number.int_digits = p;
    number.n_int = (int)(n > 20 ? 20 : n); /* over 19 digits: out of range either way */
    return store_number(col, &number, row);
}

/* A JSON string's content (in col->text) into a numeric column: an integer kind reads it as
 * integer_text does, DOUBLE, FLOAT and DECIMAL as a JSON number (what Java's parsers read the
 * same way). -1 when the record is left: blanks around it, Java's other notations ("+1.5",
 * "1.5d", "NaN", ".5"), or a value the number itself would not give exactly. */
static int string_number(Column *col, Py_ssize_t row) {
    const uint8_t *p = (const uint8_t *)col->text.data;
    Py_ssize_t n = col->text.used;
    if (col->kind == 'd' || col->kind == 'f' || col->kind == 'm') {
        Number number;
        if (text_number(p, n, &number) < 0)
            return -1;
        return store_number(col, &number, row);
    }
    return integer_text(col, p, n, row);
}

/* The value of a declared field, into row `row` of `col`. */
static int field_value(Cursor *c, Column *col, Py_ssize_t row) {
    if (c->p >= c->end)
        return -1;
    uint8_t b = *c->p;
    if (b == 'n')
        return literal(c, "null", 4); /* null: the validity bit stays 0 */
    switch (col->kind) {
    case 's': {
        if (b == 't' || b == 'f' || b == '-' || (b >= '0' && b <= '9')) {
            /* a number or a boolean: its JSON text as written, as Flink keeps it */
            const uint8_t *start = c->p;
            Number n;
            if (b == 't' ? literal(c, "true", 4) < 0
                : b == 'f' ? literal(c, "false", 5) < 0 : scan_number(c, &n) < 0)
                return -1;
            if (reserve(&col->text, c->p - start) < 0)
                return -2;
            memcpy(col->text.data + col->text.used, start, (size_t)(c->p - start));
            col->text.used += c->p - start;
            break;
        }
        if (b != '"')
            return -1;
        c->p++;
        int r = scan_string(c, &col->text);
        if (r < 0)
            return r;
        break;
    }
    case 'C': case 'D': case 't': case 'T': case 'z': case 'Z': {
        if (b != '"')
            return -1;
        c->p++;
        Py_ssize_t start = col->kind == 'C' ? col->text.used : 0;
        if (col->kind != 'C')
            col->text.used = 0; /* scratch */
        int r = scan_string(c, &col->text);
        if (r < 0)
            return r;
        if (col->text.used == start)
            return -1; /* an empty string is no temporal value */
        if (store_temporal(col, col->kind, col->text.data + start, col->text.used - start, row) < 0)
            return -1;
        break;
    }
    case 'b':
        if (b == 't') {
            if (literal(c, "true", 4) < 0)
                return -1;
            set_bit((uint8_t *)col->values, row);
        } else if (b == 'f') {
            if (literal(c, "false", 5) < 0)
                return -1;
            clear_bit((uint8_t *)col->values, row);
        } else {
            return -1;
        }
        break;
    default: {
        if (b == '"') { /* a number written as a string: Flink parses its text */
            c->p++;
            col->text.used = 0; /* scratch */
            int r = scan_string(c, &col->text);
            if (r < 0)
                return r;
            if (string_number(col, row) < 0)
                return -1;
            break;
        }
        if (b != '-' && (b < '0' || b > '9'))
            return -1;
        Number n;
        if (scan_number(c, &n) < 0 || store_number(col, &n, row) < 0)
            return -1;
    }
    }
    set_bit(col->valid, row);
    return 0;
}

typedef struct {
    uint8_t delimiter;
    int quote;  /* -1: none */
    int escape; /* -1: none */
    const char *null_literal; /* NULL: none */
    Py_ssize_t null_length;
    int comments;
} Csv;

/* A CSV field's text (unquoted) into row `row` of `col`: 0, -1 when the record is left. */
static int text_value(Column *col, const uint8_t *p, Py_ssize_t n, Py_ssize_t row) {
    switch (col->kind) {
    case 's': case 'C':
        if (col->kind == 'C' && store_temporal(col, 'C', (const char *)p, n, row) < 0)
            return -1;
        if (n == 0)
            break;
        if (reserve(&col->text, n) < 0)
            return -2;
        memcpy(col->text.data + col->text.used, p, (size_t)n);
        col->text.used += n;
        break;
    case 'D': case 't': case 'T': case 'z': case 'Z': {
        char kind = col->kind;
        if (kind == 'z' && (n == 0 || p[n - 1] != 'Z'))
            kind = 't'; /* csv: TIMESTAMP_LTZ with or without its Z, UTC either way */
        if (store_temporal(col, kind, (const char *)p, n, row) < 0)
            return -1;
        break;
    }
    case 'b':
        if (n == 4 && memcmp(p, "true", 4) == 0)
            set_bit((uint8_t *)col->values, row);
        else if (n == 5 && memcmp(p, "false", 5) == 0)
            clear_bit((uint8_t *)col->values, row);
        else
            return -1;
        break;
    case 'd': case 'f': case 'm': {
        Number number;
        if (text_number(p, n, &number) < 0 || store_number(col, &number, row) < 0)
            return -1;
        break;
    }
    default: /* integers */
        if (integer_text(col, p, n, row) < 0)
            return -1;
    }
    set_bit(col->valid, row);
    return 0;
}

/* One CSV record into row `row`: 0 decoded, -1 left undecoded, -2 out of memory. */
static int scan_csv_record(const uint8_t *p, const uint8_t *end, Column *cols, int n_cols,
                           Py_ssize_t row, const Csv *csv, Buffer *scratch) {
    if (end > p && end[-1] == '\n') { /* one trailing line break */
        end--;
        if (end > p && end[-1] == '\r')
            end--;
    }
    if (p == end || (csv->comments && *p == '#'))
        return -1; /* yields no row: decoded per record */
    int field = 0;
    const uint8_t *q = p;
    for (;;) {
        if (field >= n_cols)
            return -1; /* more fields */
        const uint8_t *text;
        Py_ssize_t length;
        if (csv->quote >= 0 && q < end && *q == csv->quote) {
            scratch->used = 0;
            q++;
            for (;;) {
                const uint8_t *run = q;
                while (q < end && *q != csv->quote && *q >= 0x20 && *q < 0x80 &&
                       (int)*q != csv->escape)
                    q++;
                if (reserve(scratch, q - run + 4) < 0)
                    return -2;
                memcpy(scratch->data + scratch->used, run, (size_t)(q - run));
                scratch->used += q - run;
                if (q >= end || (int)*q == csv->escape || (*q < 0x20 && *q != '\t'))
                    return -1;
                if (*q == '\t' || *q >= 0x80) {
                    int n = *q == '\t' ? 1 : utf8_sequence(q, end);
                    if (n == 0)
                        return -1;
                    memcpy(scratch->data + scratch->used, q, (size_t)n);
                    scratch->used += n;
                    q += n;
                    continue;
                }
                /* a quote: doubled, or the end of the field */
                if (q + 1 < end && q[1] == csv->quote) {
                    scratch->data[scratch->used++] = (char)csv->quote;
                    q += 2;
                    continue;
                }
                q++;
                break;
            }
            if (q < end && *q != csv->delimiter)
                return -1; /* text after the closing quote */
            text = (const uint8_t *)scratch->data;
            length = scratch->used;
        } else {
            text = q;
            while (q < end && *q != csv->delimiter) {
                uint8_t b = *q;
                if ((int)b == csv->quote || (int)b == csv->escape || (b < 0x20 && b != '\t'))
                    return -1;
                if (b >= 0x80) {
                    int n = utf8_sequence(q, end);
                    if (n == 0)
                        return -1;
                    q += n;
                } else {
                    q++;
                }
            }
            length = q - text;
        }
        Column *col = &cols[field];
        if (!(csv->null_literal != NULL && length == csv->null_length &&
              memcmp(text, csv->null_literal, (size_t)length) == 0)) {
            int r = text_value(col, text, length, row);
            if (r < 0)
                return r;
        }
        field++;
        if (q >= end)
            break;
        q++; /* the delimiter */
        if (q == end) {
            if (field >= n_cols)
                return -1;
            /* a last, empty field */
            Column *last = &cols[field];
            if (!(csv->null_literal != NULL && csv->null_length == 0)) {
                int r = text_value(last, q, 0, row);
                if (r < 0)
                    return r;
            }
            field++;
            break;
        }
    }
    return field == n_cols ? 0 : -1;
}

static inline int find_column(Column *cols, int n_cols, int hint, const uint8_t *key,
                              Py_ssize_t length) {
    for (int k = 0; k < n_cols; k++) {
        int j = hint + k < n_cols ? hint + k : hint + k - n_cols;
        if (cols[j].name_len == length && memcmp(cols[j].name, key, (size_t)length) == 0)
            return j;
    }
    return -1;
}

/* One record into row `row`: 0 decoded, -1 left undecoded, -2 out of memory. */
static int scan_record(Cursor *c, Column *cols, int n_cols, Py_ssize_t row) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != '{')
        return -1;
    c->p++;
    skip_ws(c);
    uint64_t seen = 0;
    int hint = 0;
    if (c->p < c->end && *c->p == '}') {
        c->p++;
    } else {
        for (;;) {
            if (c->p >= c->end || *c->p != '"')
                return -1;
            const uint8_t *key = ++c->p;
            while (c->p < c->end && *c->p != '"' && *c->p != '\\' && *c->p >= 0x20 && *c->p < 0x80)
                c->p++;
            if (c->p >= c->end || *c->p != '"') {
                /* escapes or non-ASCII in a key: it must not be a declared field's */
                c->p = key;
                int r = scan_string(c, NULL);
                if (r < 0)
                    return r;
                for (const uint8_t *q = key; q < c->p - 1; q++)
                    if (*q == '\\')
                        return -1;
                /* valid UTF-8 without escapes: compare as is */
            } else {
                c->p++;
            }
            Py_ssize_t key_length = c->p - 1 - key;
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':')
                return -1;
            c->p++;
            skip_ws(c);
            int j = find_column(cols, n_cols, hint, key, key_length);
            int r;
            if (j < 0) {
                r = skip_value(c, 1);
            } else {
                if (seen & ((uint64_t)1 << j))
                    return -1; /* a declared field twice */
                seen |= (uint64_t)1 << j;
                hint = j + 1 < n_cols ? j + 1 : 0;
                r = field_value(c, &cols[j], row);
            }
            if (r < 0)
                return r;
            r = next_member(c, '}');
            if (r < 0)
                return r;
            if (r == 0)
                break;
        }
    }
    skip_ws(c);
    return c->p == c->end ? 0 : -1; /* exactly one document */
}

/*
 * protobuf: one serialized message of a known type, decoded into a flat table's columns (each a
 * singular scalar, string, bytes or enum field of the message) when the result is certainly the
 * one the protobuf package's parsing and the format's reading give; otherwise the record is left
 * to them: malformed wire data (a truncated value, a varint of more than 10 bytes, field number
 * 0, a group, an unknown wire type), a known field in another wire type than its own, invalid
 * UTF-8 in any string field, a message, repeated or map field present (they are validated or
 * kept as the message's own), or a closed enum's unknown number in a column. Unknown fields are
 * skipped; of a field given more than once the last value counts. A column whose field is unset
 * is null when the field tracks presence (and the table does not read default values), else the
 * type's default (0, false, empty, the enum's value 0).
 */

/* The protobuf types, as FieldDescriptor numbers them. */
enum {
    PB_DOUBLE = 1, PB_FLOAT = 2, PB_INT64 = 3, PB_UINT64 = 4, PB_INT32 = 5, PB_FIXED64 = 6,
    PB_FIXED32 = 7, PB_BOOL = 8, PB_STRING = 9, PB_GROUP = 10, PB_MESSAGE = 11, PB_BYTES = 12,
    PB_UINT32 = 13, PB_ENUM = 14, PB_SFIXED32 = 15, PB_SFIXED64 = 16, PB_SINT32 = 17,
    PB_SINT64 = 18,
};
/* Field flags: present, the record is left; a closed enum (an unknown number is no value). */
#define PB_LEAVE 1
#define PB_CLOSED 2

typedef struct {
    uint32_t number;
    int type;   /* PB_* */
    int column; /* the column it fills, or -1 */
    int flags;
} ProtoField;

typedef struct {
    ProtoField *fields; /* by number, ascending */
    int n_fields;
} ProtoSpec;

static int pb_wire(int type) {
    switch (type) {
    case PB_DOUBLE: case PB_FIXED64: case PB_SFIXED64: return 1;
    case PB_FLOAT: case PB_FIXED32: case PB_SFIXED32: return 5;
    case PB_STRING: case PB_BYTES: case PB_MESSAGE: return 2;
    case PB_GROUP: return 3;
    default: return 0;
    }
}

/* A varint of at most `most` bytes (10: 64 bits, the last byte at most 1): 0, or -1. */
static inline int read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out, int most) {
    const uint8_t *p = *pp;
    uint64_t value = 0;
    for (int i = 0; i < most; i++) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            return -1;
        value |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *out = value;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

static inline int valid_utf8(const uint8_t *p, Py_ssize_t n) {
    const uint8_t *end = p + n;
    while (p < end) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        int k = utf8_sequence(p, end);
        if (k == 0)
            return 0;
        p += k;
    }
    return 1;
}

static const ProtoField *find_field(const ProtoSpec *spec, uint32_t number) {
    int lo = 0, hi = spec->n_fields - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        uint32_t at = spec->fields[mid].number;
        if (at == number)
            return &spec->fields[mid];
        if (at < number)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

static const EnumName *enum_name(const Column *col, int32_t number) {
    for (int k = 0; k < col->n_enum_names; k++)
        if (col->enum_names[k].number == number)
            return &col->enum_names[k];
    return NULL;
}

static int put_text(Column *col, Py_ssize_t mark, const void *p, Py_ssize_t n, Py_ssize_t row) {
    col->text.used = mark; /* a field given again replaces its value */
    if (reserve(&col->text, n) < 0)
        return -2;
    if (n > 0)
        memcpy(col->text.data + col->text.used, p, (size_t)n);
    col->text.used += n;
    set_bit(col->valid, row);
    return 0;
}

/* A field's value into its column: 0, -1 to leave the record, -2 out of memory. */
static int proto_value(Column *col, const ProtoField *f, uint64_t v, const uint8_t *bytes,
                       Py_ssize_t len, Py_ssize_t row, Py_ssize_t mark) {
    int32_t i32 = (int32_t)(uint32_t)v;
    int64_t i64 = (int64_t)v;
    if (f->type == PB_SINT32)
        i32 = (int32_t)(((uint32_t)v >> 1) ^ (uint32_t)-(int32_t)((uint32_t)v & 1));
    if (f->type == PB_SINT64)
        i64 = (int64_t)((v >> 1) ^ (uint64_t)-(int64_t)(v & 1));
    if (f->type == PB_ENUM) {
        i64 = i32;
        if (f->flags & PB_CLOSED && enum_name(col, i32) == NULL)
            return -1; /* parsing keeps it as an unknown field: the column reads unset */
    }
    switch (col->kind) {
    case 'I':
        memcpy(col->values + row * 4, &i32, 4);
        break;
    case 'L':
        memcpy(col->values + row * 8, &i64, 8);
        break;
    case 'f': {
        uint32_t bits = (uint32_t)v;
        memcpy(col->values + row * 4, &bits, 4);
        break;
    }
    case 'd':
        memcpy(col->values + row * 8, &v, 8);
        break;
    case 'b':
        if (v != 0)
            set_bit((uint8_t *)col->values, row);
        else
            clear_bit((uint8_t *)col->values, row);
        break;
    case 's':
        if (f->type == PB_ENUM) {
            const EnumName *e = enum_name(col, i32);
            return e != NULL ? put_text(col, mark, e->name, e->length, row)
                             : put_text(col, mark, "UNRECOGNIZED", 12, row);
        }
        return put_text(col, mark, bytes, len, row);
    case 'y':
        return put_text(col, mark, bytes, len, row);
    default:
        return -1;
    }
    set_bit(col->valid, row);
    return 0;
}

/* An unset field's column: null, or its type's default. */
static int proto_unset(Column *col, Py_ssize_t row, Py_ssize_t mark) {
    if (col->unset_null)
        return 0;
    int64_t zero = 0;
    switch (col->kind) {
    case 'I': case 'f': memcpy(col->values + row * 4, &zero, 4); break;
    case 'L': case 'd': memcpy(col->values + row * 8, &zero, 8); break;
    case 'b': clear_bit((uint8_t *)col->values, row); break;
    case 's':
        if (col->n_enum_names > 0) {
            const EnumName *e = enum_name(col, 0);
            return e != NULL ? put_text(col, mark, e->name, e->length, row)
                             : put_text(col, mark, "UNRECOGNIZED", 12, row);
        }
        return put_text(col, mark, "", 0, row);
    case 'y': return put_text(col, mark, "", 0, row);
    default: return -1;
    }
    set_bit(col->valid, row);
    return 0;
}

/* One message into row `row` (marks: the columns' text sizes before it): 0 decoded, -1 left,
 * -2 out of memory. */
static int scan_proto_record(const uint8_t *p, const uint8_t *end, Column *cols, int n_cols,
                             Py_ssize_t row, const ProtoSpec *spec, const Py_ssize_t *marks) {
    uint64_t seen = 0;
    while (p < end) {
        uint64_t tag, v = 0;
        if (read_varint(&p, end, &tag, 5) < 0 || tag > UINT32_MAX || (tag >> 3) == 0)
            return -1;
        int wire = (int)(tag & 7);
        const uint8_t *bytes = NULL;
        Py_ssize_t len = 0;
        switch (wire) {
        case 0:
            if (read_varint(&p, end, &v, 10) < 0)
                return -1;
            break;
        case 1:
            if (end - p < 8)
                return -1;
            memcpy(&v, p, 8);
            p += 8;
            break;
        case 5: {
            uint32_t w;
            if (end - p < 4)
                return -1;
            memcpy(&w, p, 4);
            v = w;
            p += 4;
            break;
        }
        case 2:
            if (read_varint(&p, end, &v, 10) < 0 || v > (uint64_t)(end - p))
                return -1;
            bytes = p;
            len = (Py_ssize_t)v;
            p += len;
            break;
        default: /* groups (3, 4), or no wire type */
            return -1;
        }
        const ProtoField *f = find_field(spec, (uint32_t)(tag >> 3));
        if (f == NULL)
            continue; /* an unknown field, kept aside by parsing */
        if (f->flags & PB_LEAVE || wire != pb_wire(f->type))
            return -1;
        if (f->type == PB_STRING && !valid_utf8(bytes, len))
            return -1;
        if (f->column < 0)
            continue;
        int r = proto_value(&cols[f->column], f, v, bytes, len, row, marks[f->column]);
        if (r < 0)
            return r;
        seen |= (uint64_t)1 << f->column;
    }
    for (int j = 0; j < n_cols; j++) {
        if (!(seen & ((uint64_t)1 << j))) {
            int r = proto_unset(&cols[j], row, marks[j]);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/*
 * avro: one datum of the table's record schema in Avro's binary encoding (the schema Flink
 * derives from the columns: the columns' fields in order, a nullable column a union of null and
 * its type), decoded into a flat table's columns when the result is certainly the one the
 * per-record decoding gives (fastavro, Spark's from_avro); otherwise the record is left to it:
 * a truncated datum, bytes after it, a union branch other than 0 (null) and 1, a varint longer
 * than its type's (5 bytes for an int, 10 for a long) or an int beyond 32 bits, a boolean byte
 * other than 0 and 1, a negative length, invalid UTF-8 in a string, a value out of its column's
 * range (TINYINT, SMALLINT), a decimal whose bytes are empty or whose value does not fit its
 * precision, or a date, time or timestamp Python's datetime cannot hold. The kinds:
 *
 *   's' STRING, 'y' BYTES: a string or bytes (a long length, then the bytes)
 *   'b' BOOLEAN, 'f' FLOAT, 'd' DOUBLE: the value (1 byte; 4 and 8 bytes little endian)
 *   'B' 'H' 'I' TINYINT, SMALLINT, INT: an int (a zigzag varint); 'L' BIGINT: a long
 *   'm' DECIMAL(p, s): bytes+decimal, the unscaled value two's complement big endian
 *   'D' DATE: int+date (days since 1970-01-01); 'C' TIME: int+time-millis, kept as the text
 *       Python's isoformat gives (HH:MM:SS, with .mmm when the milliseconds are not 0)
 *   't' 'T' TIMESTAMP, TIMESTAMP_LTZ: long+timestamp-millis / -micros (also local-timestamp-*),
 *       as microseconds since the epoch
 */

/* The days and instants Python's datetime holds (0001-01-01 to 9999-12-31), as fastavro reads
 * them: beyond them the per-record decoding finds the record dirty. */
#define AVRO_MIN_DAYS (-719162LL)
#define AVRO_MAX_DAYS 2932896LL
#define AVRO_MIN_MICROS (-62135596800000000LL)
#define AVRO_MAX_MICROS 253402300799999999LL

/* An Avro int (a zigzag varint of at most 5 bytes, within 32 bits): 0, or -1. */
static inline int avro_int(const uint8_t **pp, const uint8_t *end, int32_t *out) {
    uint64_t v;
    if (read_varint(pp, end, &v, 5) < 0 || v > UINT32_MAX)
        return -1;
    uint32_t u = (uint32_t)v;
    *out = (int32_t)((u >> 1) ^ (0u - (u & 1)));
    return 0;
}

/* An Avro long (a zigzag varint of at most 10 bytes): 0, or -1. */
static inline int avro_long(const uint8_t **pp, const uint8_t *end, int64_t *out) {
    uint64_t v;
    if (read_varint(pp, end, &v, 10) < 0)
        return -1;
    *out = (int64_t)((v >> 1) ^ (0u - (v & 1)));
    return 0;
}

/* The bytes of a string, bytes or decimal (a long length, then as many bytes): 0, or -1. */
static inline int avro_bytes(const uint8_t **pp, const uint8_t *end, const uint8_t **bytes,
                             Py_ssize_t *n) {
    int64_t length;
    if (avro_long(pp, end, &length) < 0 || length < 0 || length > end - *pp)
        return -1;
    *bytes = *pp;
    *n = (Py_ssize_t)length;
    *pp += length;
    return 0;
}

/* A decimal's unscaled value (two's complement, big endian) into a 16-byte slot: 0, or -1 when
 * the bytes are empty or the value has more than `precision` digits. */
static int avro_decimal(const uint8_t *p, Py_ssize_t n, int precision, char *out) {
    if (n == 0)
        return -1; /* fastavro reads 0, Spark's from_avro nothing: the per-record path decides */
    while (n > 1 && ((p[0] == 0x00 && p[1] < 0x80) || (p[0] == 0xFF && p[1] >= 0x80))) {
        p++; /* sign extension */
        n--;
    }
    if (n > 16)
        return -1;
    unsigned __int128 u = p[0] >= 0x80 ? ~(unsigned __int128)0 : 0;
    for (Py_ssize_t i = 0; i < n; i++)
        u = (u << 8) | p[i];
    __int128 value = (__int128)u;
    unsigned __int128 bound = 1;
    for (int i = 0; i < precision; i++)
        bound *= 10;
    unsigned __int128 magnitude = value < 0 ? (unsigned __int128)0 - u : u;
    if (magnitude >= bound)
        return -1;
    memcpy(out, &value, 16);
    return 0;
}

/* A time of day in milliseconds as Python's isoformat writes it (milliseconds only when not 0):
 * its length. */
static int time_text(int32_t ms, char text[16]) {
    int h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, f = ms % 1000;
    text[0] = (char)('0' + h / 10);
    text[1] = (char)('0' + h % 10);
    text[2] = ':';
    text[3] = (char)('0' + m / 10);
    text[4] = (char)('0' + m % 10);
    text[5] = ':';
    text[6] = (char)('0' + s / 10);
    text[7] = (char)('0' + s % 10);
    if (f == 0)
        return 8;
    text[8] = '.';
    text[9] = (char)('0' + f / 100);
    text[10] = (char)('0' + f / 10 % 10);
    text[11] = (char)('0' + f % 10);
    return 12;
}

static int append_text(Column *col, const void *p, Py_ssize_t n) {
    if (reserve(&col->text, n) < 0)
        return -2;
    if (n > 0)
        memcpy(col->text.data + col->text.used, p, (size_t)n);
    col->text.used += n;
    return 0;
}

/* One value of the column's type at *pp into row `row`: 0, -1 to leave the record, -2 out of
 * memory. */
static int avro_value(const uint8_t **pp, const uint8_t *end, Column *col, Py_ssize_t row) {
    char *slot = col->values ? col->values + row * col->width : NULL;
    int32_t i32;
    int64_t i64;
    const uint8_t *bytes;
    Py_ssize_t n;
    switch (col->kind) {
    case 'b':
        if (*pp >= end || **pp > 1)
            return -1;
        if (*(*pp)++)
            set_bit((uint8_t *)col->values, row);
        else
            clear_bit((uint8_t *)col->values, row);
        break;
    case 'B': case 'H': case 'I': case 'D': case 'C':
        if (avro_int(pp, end, &i32) < 0)
            return -1;
        if (col->kind == 'B') {
            if (i32 < INT8_MIN || i32 > INT8_MAX)
                return -1;
            int8_t v = (int8_t)i32;
            memcpy(slot, &v, 1);
        } else if (col->kind == 'H') {
            if (i32 < INT16_MIN || i32 > INT16_MAX)
                return -1;
            int16_t v = (int16_t)i32;
            memcpy(slot, &v, 2);
        } else if (col->kind == 'C') {
            char text[16];
            if (i32 < 0 || i32 >= 86400000)
                return -1;
            if (append_text(col, text, time_text(i32, text)) < 0)
                return -2;
        } else {
            if (col->kind == 'D' && (i32 < AVRO_MIN_DAYS || i32 > AVRO_MAX_DAYS))
                return -1;
            memcpy(slot, &i32, 4);
        }
        break;
    case 'L': case 't': case 'T':
        if (avro_long(pp, end, &i64) < 0)
            return -1;
        if (col->kind == 't') { /* milliseconds: the range checked before the product */
            if (i64 < AVRO_MIN_MICROS / 1000 || i64 > AVRO_MAX_MICROS / 1000)
                return -1;
            i64 *= 1000;
        } else if (col->kind == 'T' && (i64 < AVRO_MIN_MICROS || i64 > AVRO_MAX_MICROS)) {
            return -1;
        }
        memcpy(slot, &i64, 8);
        break;
    case 'f': case 'd':
        if (end - *pp < col->width)
            return -1;
        memcpy(slot, *pp, (size_t)col->width); /* little endian, as Arrow's */
        *pp += col->width;
        break;
    case 's': case 'y':
        if (avro_bytes(pp, end, &bytes, &n) < 0 || (col->kind == 's' && !valid_utf8(bytes, n)))
            return -1;
        if (append_text(col, bytes, n) < 0)
            return -2;
        break;
    case 'm':
        if (avro_bytes(pp, end, &bytes, &n) < 0 || avro_decimal(bytes, n, col->precision, slot) < 0)
            return -1;
        break;
    default:
        return -1;
    }
    set_bit(col->valid, row);
    return 0;
}

/* One datum into row `row`: 0 decoded, -1 left, -2 out of memory. */
static int scan_avro_record(const uint8_t *p, const uint8_t *end, Column *cols, int n_cols,
                            Py_ssize_t row) {
    for (int j = 0; j < n_cols; j++) {
        if (cols[j].nullable) { /* the union's branch: 0 null, 1 the type (zigzag: 0, 2) */
            uint64_t branch;
            if (read_varint(&p, end, &branch, 10) < 0 || (branch != 0 && branch != 2))
                return -1;
            if (branch == 0)
                continue;
        }
        int r = avro_value(&p, end, &cols[j], row);
        if (r < 0)
            return r;
    }
    return p == end ? 0 : -1; /* exactly one datum */
}

static void free_columns(Column *cols, int n_cols) {
    for (int j = 0; j < n_cols; j++) {
        free(cols[j].enum_names);
        free(cols[j].valid);
        free(cols[j].values);
        free(cols[j].offsets);
        free(cols[j].text.data);
    }
}

static PyObject *as_bytes(const void *data, Py_ssize_t size) {
    return PyBytes_FromStringAndSize((const char *)data, size);
}

/* The buffers of an Arrow binary array's records [offset, offset + length). */
typedef struct {
    Py_buffer validity, offsets, data;
    int have_validity;
    Py_ssize_t offset;
} Batch;

/* Gets the buffers and checks that they hold the records: 0, or -1 with an exception set (what
 * was got is released by release_batch either way). */
static int get_batch(Batch *b, PyObject *validity_obj, PyObject *offsets_obj, PyObject *data_obj,
                     Py_ssize_t offset, Py_ssize_t length) {
    memset(b, 0, sizeof(*b));
    b->have_validity = validity_obj != Py_None;
    b->offset = offset;
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset and length must not be negative");
        return -1;
    }
    if (b->have_validity && PyObject_GetBuffer(validity_obj, &b->validity, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(offsets_obj, &b->offsets, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(data_obj, &b->data, PyBUF_SIMPLE) < 0)
        return -1;
    /* The records need offset + length + 1 offsets (no sum here can overflow: both are at most
     * the number of offsets) and as many validity bits. */
    Py_ssize_t n_offsets = b->offsets.len / (Py_ssize_t)sizeof(int32_t);
    if (n_offsets < 1 || length > n_offsets - 1 || offset > n_offsets - 1 - length ||
        (b->have_validity && (offset + length + 7) / 8 > b->validity.len)) {
        PyErr_SetString(PyExc_ValueError, "the buffers are shorter than offset + length");
        return -1;
    }
    return 0;
}

static void release_batch(Batch *b) {
    if (b->validity.obj != NULL)
        PyBuffer_Release(&b->validity);
    if (b->offsets.obj != NULL)
        PyBuffer_Release(&b->offsets);
    if (b->data.obj != NULL)
        PyBuffer_Release(&b->data);
}

/* Record i of the batch: 1 with its bytes [*start, *stop), 0 when it is null, -1 when its
 * offsets point outside the data. Each record's offsets are read once (with memcpy: the buffer
 * may be any bytes-like object, aligned or not) and checked against the data: a buffer another
 * thread writes to cannot move a record out of it after the check. */
static int record_bytes(const Batch *b, Py_ssize_t i, const uint8_t **start,
                        const uint8_t **stop) {
    Py_ssize_t at = b->offset + i;
    if (b->have_validity && !((((const uint8_t *)b->validity.buf)[at >> 3] >> (at & 7)) & 1))
        return 0;
    const char *starts = (const char *)b->offsets.buf;
    int32_t first, last;
    memcpy(&first, starts + at * (Py_ssize_t)sizeof(int32_t), sizeof(int32_t));
    memcpy(&last, starts + (at + 1) * (Py_ssize_t)sizeof(int32_t), sizeof(int32_t));
    if (first < 0 || last < first || last > b->data.len)
        return -1;
    *start = (const uint8_t *)b->data.buf + first;
    *stop = (const uint8_t *)b->data.buf + last;
    return 1;
}

/* A json or csv column's (name, kind, precision, scale) into col: 0, or -1 with an exception
 * set. */
static int text_column(PyObject *spec, Column *col) {
    const char *name, *kind;
    Py_ssize_t name_len, kind_len;
    int precision, scale;
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "a column must be a (name, kind, precision, scale) tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(spec, "y#s#ii", &name, &name_len, &kind, &kind_len, &precision, &scale))
        return -1;
    if (kind_len != 1) {
        PyErr_Format(PyExc_ValueError, "unknown column kind %R", PyTuple_GET_ITEM(spec, 1));
        return -1;
    }
    col->name = name;
    col->name_len = name_len;
    col->kind = kind[0];
    col->precision = precision;
    col->scale = scale;
    switch (col->kind) {
    case 's': case 'C': col->width = 0; break;
    case 'D': col->width = 4; break;
    case 't': case 'T': case 'z': case 'Z': col->width = 8; break;
    case 'b': col->width = 0; break; /* a bitmap, as Arrow's booleans */
    case 'B': col->width = 1; break;
    case 'H': col->width = 2; break;
    case 'I': case 'f': col->width = 4; break;
    case 'L': case 'd': col->width = 8; break;
    case 'm':
        col->width = 16;
        if (precision < 1 || precision > 38 || scale < 0 || scale > precision) {
            PyErr_SetString(PyExc_ValueError, "DECIMAL precision must be 1..38, scale 0..p");
            return -1;
        }
        break;
    default:
        PyErr_Format(PyExc_ValueError, "unknown column kind %R", PyTuple_GET_ITEM(spec, 1));
        return -1;
    }
    return 0;
}

/* A protobuf column's (name, kind, unset_null, enum names or None) into col: 0, or -1 with an
 * exception set. */
static int proto_column(PyObject *spec, Column *col) {
    const char *name, *kind;
    Py_ssize_t name_len, kind_len;
    int unset_null;
    PyObject *names;
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError,
                        "a column must be a (name, kind, unset_null, enum names) tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(spec, "y#s#pO", &name, &name_len, &kind, &kind_len, &unset_null,
                          &names))
        return -1;
    if (kind_len != 1 || !strchr("ILfdbsy", kind[0])) {
        PyErr_Format(PyExc_ValueError, "unknown column kind %R", PyTuple_GET_ITEM(spec, 1));
        return -1;
    }
    col->name = name;
    col->name_len = name_len;
    col->kind = kind[0];
    col->width = strchr("If", kind[0]) ? 4 : strchr("Ld", kind[0]) ? 8 : 0;
    col->unset_null = unset_null;
    if (names == Py_None)
        return 0;
    if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) > 1 << 20) {
        PyErr_SetString(PyExc_TypeError, "enum names must be a tuple of (number, name) or None");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    col->enum_names = calloc((size_t)(n ? n : 1), sizeof(EnumName));
    if (col->enum_names == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        EnumName *e = &col->enum_names[k];
        PyObject *pair = PyTuple_GET_ITEM(names, k);
        if (!PyTuple_Check(pair)) {
            PyErr_SetString(PyExc_TypeError, "an enum name must be a (number, name) tuple");
            return -1;
        }
        if (!PyArg_ParseTuple(pair, "iy#", &e->number, &e->name, &e->length))
            return -1;
        col->n_enum_names = (int)(k + 1);
    }
    return 0;
}

/* An avro column's (name, kind, nullable, precision, scale) into col: 0, or -1 with an
 * exception set. */
static int avro_column(PyObject *spec, Column *col) {
    const char *name, *kind;
    Py_ssize_t name_len, kind_len;
    int nullable, precision, scale;
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError,
                        "a column must be a (name, kind, nullable, precision, scale) tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(spec, "y#s#pii", &name, &name_len, &kind, &kind_len, &nullable,
                          &precision, &scale))
        return -1;
    if (kind_len != 1 || !strchr("sybBHILfdmDCtT", kind[0])) {
        PyErr_Format(PyExc_ValueError, "unknown column kind %R", PyTuple_GET_ITEM(spec, 1));
        return -1;
    }
    if (kind[0] == 'm' && (precision < 1 || precision > 38 || scale < 0 || scale > precision)) {
        PyErr_SetString(PyExc_ValueError, "DECIMAL precision must be 1..38, scale 0..p");
        return -1;
    }
    col->name = name;
    col->name_len = name_len;
    col->kind = kind[0];
    switch (kind[0]) { /* text kinds and booleans (a bitmap): 0 */
    case 'B': col->width = 1; break;
    case 'H': col->width = 2; break;
    case 'I': case 'D': case 'f': col->width = 4; break;
    case 'L': case 'd': case 't': case 'T': col->width = 8; break;
    case 'm': col->width = 16; break;
    default: col->width = 0; break;
    }
    col->nullable = nullable;
    col->precision = precision;
    col->scale = scale;
    return 0;
}

/* A batch through the json scanner (csv, proto NULL and avro 0), the csv one, the protobuf one
 * or the avro one. */
static PyObject *scan_batch(PyObject *validity_obj, PyObject *offsets_obj, PyObject *data_obj,
                            Py_ssize_t offset, Py_ssize_t length, PyObject *columns_obj,
                            const Csv *csv, const ProtoSpec *proto, int avro) {
    if (!PyTuple_Check(columns_obj) || PyTuple_GET_SIZE(columns_obj) > MAX_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "columns must be a tuple of at most 64 columns");
        return NULL;
    }
    int n_cols = (int)PyTuple_GET_SIZE(columns_obj);
    Column cols[MAX_COLUMNS];
    memset(cols, 0, sizeof(cols));
    Batch batch;
    PyObject *result = NULL;
    uint8_t *decoded = NULL;
    Py_ssize_t bitmap_size = 0;

    if (get_batch(&batch, validity_obj, offsets_obj, data_obj, offset, length) < 0)
        goto done;
    bitmap_size = (length + 7) / 8;
    for (int j = 0; j < n_cols; j++) {
        PyObject *spec = PyTuple_GET_ITEM(columns_obj, j);
        Column *col = &cols[j];
        int described = proto != NULL ? proto_column(spec, col)
                        : avro      ? avro_column(spec, col)
                                    : text_column(spec, col);
        if (described < 0)
            goto done;
        col->valid = calloc((size_t)(bitmap_size ? bitmap_size : 1), 1);
        if (is_text(col->kind)) {
            col->offsets = malloc(sizeof(int32_t) * (size_t)(length + 1));
            if (col->offsets != NULL)
                col->offsets[0] = 0;
        } else if (col->kind == 'b') {
            col->values = calloc((size_t)(bitmap_size ? bitmap_size : 1), 1);
        } else {
            col->values = calloc((size_t)(length ? length : 1), (size_t)col->width);
        }
        if (col->valid == NULL || (is_text(col->kind) ? col->offsets == NULL : col->values == NULL)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    decoded = calloc((size_t)(bitmap_size ? bitmap_size : 1), 1);
    if (decoded == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Buffer scratch = {0};

    int failed = 0;
    Py_ssize_t bad = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t marks[MAX_COLUMNS];
    for (Py_ssize_t i = 0; i < length && !failed; i++) {
        const uint8_t *start, *stop;
        int present = record_bytes(&batch, i, &start, &stop);
        int r = -1;
        if (present < 0) {
            failed = 3;
            bad = offset + i;
            break;
        }
        if (present) {
            for (int j = 0; j < n_cols; j++)
                marks[j] = cols[j].text.used;
            if (proto != NULL) {
                r = scan_proto_record(start, stop, cols, n_cols, i, proto, marks);
            } else if (avro) {
                r = scan_avro_record(start, stop, cols, n_cols, i);
            } else if (csv != NULL) {
                r = scan_csv_record(start, stop, cols, n_cols, i, csv, &scratch);
            } else {
                Cursor c = {start, stop};
                r = scan_record(&c, cols, n_cols, i);
            }
            if (r == -2) {
                failed = 1;
                break;
            }
            if (r == 0) {
                set_bit(decoded, i);
            } else { /* undo what the record wrote */
                for (int j = 0; j < n_cols; j++) {
                    clear_bit(cols[j].valid, i);
                    cols[j].text.used = marks[j];
                }
            }
        }
        for (int j = 0; j < n_cols; j++) {
            if (is_text(cols[j].kind)) {
                if (cols[j].text.used > INT32_MAX) {
                    failed = 2;
                    break;
                }
                cols[j].offsets[i + 1] = (int32_t)cols[j].text.used;
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(scratch.data);
    if (failed == 1) {
        PyErr_NoMemory();
        goto done;
    }
    if (failed == 2) {
        PyErr_SetString(PyExc_OverflowError, "a string column exceeds 2 GiB in one batch");
        goto done;
    }
    if (failed == 3) {
        PyErr_Format(PyExc_ValueError,
                     "the offsets of record %zd point outside the data buffer (or decrease)", bad);
        goto done;
    }

    PyObject *buffers = PyList_New(n_cols);
    if (buffers == NULL)
        goto done;
    for (int j = 0; j < n_cols; j++) {
        Column *col = &cols[j];
        PyObject *entry;
        if (is_text(col->kind))
            entry = Py_BuildValue("(NNN)", as_bytes(col->valid, bitmap_size),
                                  as_bytes(col->offsets, sizeof(int32_t) * (length + 1)),
                                  as_bytes(col->text.data ? col->text.data : "", col->text.used));
        else
            entry = Py_BuildValue("(NN)", as_bytes(col->valid, bitmap_size),
                                  as_bytes(col->values, col->kind == 'b' ? bitmap_size
                                                                         : col->width * length));
        if (entry == NULL) {
            Py_DECREF(buffers);
            goto done;
        }
        PyList_SET_ITEM(buffers, j, entry);
    }
    result = Py_BuildValue("(NN)", as_bytes(decoded, bitmap_size), buffers);

done:
    free(decoded);
    free_columns(cols, n_cols);
    release_batch(&batch);
    return result;
}

PyDoc_STRVAR(scan_doc,
    "scan(validity, offsets, data, offset, length, columns) -> (decoded, [buffers per column])\n\n"
    "Decode `length` JSON values of an Arrow binary array (its buffers; validity may be None;\n"
    "`offset` is the array's offset) into the flat `columns`: (name: bytes, kind: str,\n"
    "precision: int, scale: int) each. `decoded` is a bitmap of the records decoded; each\n"
    "column's buffers are (validity bitmap, values) or, for strings, (validity, offsets, bytes).");

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *validity, *offsets, *data, *columns;
    Py_ssize_t offset, length;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnnO", &validity, &offsets, &data, &offset, &length, &columns))
        return NULL;
    return scan_batch(validity, offsets, data, offset, length, columns, NULL, NULL, 0);
}

/*
 * json, nested: the same scanner over a table whose columns are rows (at any depth), arrays and
 * maps with text keys, into the Arrow buffers of each column's tree. A row takes a JSON object
 * (or null); its fields are found as the record's are (a declared field given twice, or a key
 * with an escape, leaves the record; fields not declared are validated and skipped; a field the
 * object lacks is null). An array takes a JSON array (or null), each element a value of its
 * element type. A map takes a JSON object (or null): each key's unescaped text (a lone surrogate
 * escape leaves the record) and its value; of a repeated key, every value must convert (as
 * Flink converts every entry) and the last entry is kept, the map's entries in their order
 * otherwise. Scalars are the flat scanner's kinds, with its rules. With `node_mode` (Flink's
 * node-based reading, the changelog formats' envelopes), a number in a text position leaves
 * the record (that reading writes numbers otherwise than as written).
 *
 * The tree's nodes (the root, a row of the table's columns, first) each write their slots
 * (one per value, null or not) into growing buffers: validity bits, values (or, for text, the
 * bytes and offsets; for arrays and maps, offsets into their children). A record left is undone
 * by putting every node back to its slot count and text size before it.
 */
#define MAX_TREE_NODES 4096
#define MAX_TREE_DEPTH 64
#define MAX_ROW_FIELDS 64

typedef struct {
    Column col;             /* kind: a scalar kind, or 'R' row, 'A' array, 'M' map */
    Py_ssize_t count;       /* slots written */
    Py_ssize_t capacity;    /* slots the buffers hold */
    int first, n_children;  /* children: the nodes kids[first], ..., kids[first + n - 1] */
    int end;                /* the subtree is the nodes [this, end) (they are in preorder) */
} Node;

typedef struct {
    Node *nodes;
    int n_nodes;
    int kids[MAX_TREE_NODES];
    int n_kids;
    Buffer marks;           /* a stack of (count, text size) pairs of nodes, to undo */
    int node_mode;
    int overflow;           /* a text or a child of more than 2^31 - 1 bytes or slots */
} Tree;

static inline int has_offsets(char kind) { return is_text(kind) || kind == 'A' || kind == 'M'; }

/* Room for slot `slot` of n: 0, or -2 out of memory. New bytes are zero. */
static int node_room(Node *n, Py_ssize_t slot) {
    if (slot < n->capacity)
        return 0;
    Py_ssize_t capacity = n->capacity ? n->capacity : 64;
    while (capacity <= slot)
        capacity *= 2;
    Py_ssize_t old_bits = (n->capacity + 7) / 8, bits = (capacity + 7) / 8;
    uint8_t *valid = realloc(n->col.valid, (size_t)bits);
    if (valid == NULL)
        return -2;
    memset(valid + old_bits, 0, (size_t)(bits - old_bits));
    n->col.valid = valid;
    char kind = n->col.kind;
    if (kind == 'b' || n->col.width > 0) {
        Py_ssize_t old = kind == 'b' ? old_bits : n->capacity * n->col.width;
        Py_ssize_t size = kind == 'b' ? bits : capacity * n->col.width;
        char *values = realloc(n->col.values, (size_t)size);
        if (values == NULL)
            return -2;
        memset(values + old, 0, (size_t)(size - old));
        n->col.values = values;
    }
    if (has_offsets(kind)) {
        int32_t *offsets = realloc(n->col.offsets, sizeof(int32_t) * (size_t)(capacity + 1));
        if (offsets == NULL)
            return -2;
        if (n->capacity == 0)
            offsets[0] = 0;
        n->col.offsets = offsets;
    }
    n->capacity = capacity;
    return 0;
}

static inline Node *child(Tree *t, const Node *n, int k) { return &t->nodes[t->kids[n->first + k]]; }

/* The end offset of slot `slot` (its children's count, or its text size): 0, or -1 beyond
 * 2^31 - 1. */
static inline int end_offset(Tree *t, Node *n, Py_ssize_t slot, Py_ssize_t end) {
    if (end > INT32_MAX) {
        t->overflow = 1;
        return -1;
    }
    n->col.offsets[slot + 1] = (int32_t)end;
    return 0;
}

/* A null slot (a row's: a null slot in each of its fields too). 0, -1, -2 out of memory. */
static int append_null(Tree *t, Node *n) {
    Py_ssize_t slot = n->count;
    if (node_room(n, slot) < 0)
        return -2;
    clear_bit(n->col.valid, slot);
    char kind = n->col.kind;
    if (has_offsets(kind))
        n->col.offsets[slot + 1] = n->col.offsets[slot];
    if (kind == 'R') {
        for (int k = 0; k < n->n_children; k++) {
            int r = append_null(t, child(t, n, k));
            if (r < 0)
                return r;
        }
    }
    n->count = slot + 1;
    return 0;
}

/* Pushes the slot counts and text sizes of the nodes [from, to) onto the marks; returns where
 * they start, or -2 out of memory. */
static Py_ssize_t push_marks(Tree *t, int from, int to) {
    Py_ssize_t base = t->marks.used;
    if (reserve(&t->marks, (Py_ssize_t)sizeof(Py_ssize_t) * 2 * (to - from)) < 0)
        return -2;
    Py_ssize_t *m = (Py_ssize_t *)(t->marks.data + base);
    for (int i = from; i < to; i++) {
        *m++ = t->nodes[i].count;
        *m++ = t->nodes[i].col.text.used;
    }
    t->marks.used += (Py_ssize_t)sizeof(Py_ssize_t) * 2 * (to - from);
    return base;
}

/* Puts the nodes [from, to) back to the marks at `base` (pushed for the same nodes). */
static void undo_marks(Tree *t, Py_ssize_t base, int from, int to) {
    const Py_ssize_t *m = (const Py_ssize_t *)(t->marks.data + base);
    for (int i = from; i < to; i++) {
        t->nodes[i].count = *m++;
        t->nodes[i].col.text.used = *m++;
    }
}

static int tree_value(Cursor *c, Tree *t, Node *n, int depth);

/* A scalar into its slot, with the flat scanner's rules (field_value). */
static int tree_scalar(Cursor *c, Tree *t, Node *n) {
    Py_ssize_t slot = n->count;
    if (node_room(n, slot) < 0)
        return -2;
    clear_bit(n->col.valid, slot);
    if (t->node_mode && n->col.kind == 's' && c->p < c->end &&
        (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')))
        return -1; /* the node-based reading writes a number its own way */
    int r = field_value(c, &n->col, slot);
    if (r < 0)
        return r;
    if (is_text(n->col.kind) && end_offset(t, n, slot, n->col.text.used) < 0)
        return -1;
    n->count = slot + 1;
    return 0;
}

/* Whether two short byte strings of `n` bytes are equal (field names: a loop beats a call). */
static inline int same_bytes(const char *a, const uint8_t *b, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if ((uint8_t)a[i] != b[i])
            return 0;
    return 1;
}

/* A key at c->p (its opening quote passed) as the record's keys are read (scan_record): its
 * bytes, or -1 when it has an escape (it must not be a declared field's, and escapes could make
 * it one). */
static int plain_key(Cursor *c, const uint8_t **key, Py_ssize_t *length) {
    const uint8_t *k = c->p;
    while (c->p < c->end && *c->p != '"' && *c->p != '\\' && *c->p >= 0x20 && *c->p < 0x80)
        c->p++;
    if (c->p >= c->end || *c->p != '"') {
        c->p = k;
        int r = scan_string(c, NULL);
        if (r < 0)
            return r;
        if (memchr(k, '\\', (size_t)(c->p - 1 - k)) != NULL)
            return -1;
    } else {
        c->p++;
    }
    *key = k;
    *length = c->p - 1 - k;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
        return -1;
    c->p++;
    skip_ws(c);
    return 0;
}

/* A JSON object at c->p into a row's slot. */
static int tree_row(Cursor *c, Tree *t, Node *n, int depth) {
    Py_ssize_t slot = n->count;
    if (depth > MAX_DEPTH || node_room(n, slot) < 0)
        return depth > MAX_DEPTH ? -1 : -2;
    c->p++;
    skip_ws(c);
    uint64_t seen = 0;
    int hint = 0, fields = n->n_children;
    if (c->p < c->end && *c->p == '}') {
        c->p++;
    } else {
        for (;;) {
            if (c->p >= c->end || *c->p != '"')
                return -1;
            c->p++;
            const uint8_t *key;
            Py_ssize_t length;
            int r = plain_key(c, &key, &length);
            if (r < 0)
                return r;
            int j = -1;
            for (int k = 0; k < fields; k++) {
                int i = hint + k < fields ? hint + k : hint + k - fields;
                const Column *f = &child(t, n, i)->col;
                if (f->name_len == length && same_bytes(f->name, key, length)) {
                    j = i;
                    break;
                }
            }
            if (j < 0) {
                r = skip_value(c, depth + 1);
            } else {
                if (seen & ((uint64_t)1 << j))
                    return -1; /* a declared field twice */
                seen |= (uint64_t)1 << j;
                hint = j + 1 < fields ? j + 1 : 0;
                r = tree_value(c, t, child(t, n, j), depth + 1);
            }
            if (r < 0)
                return r;
            r = next_member(c, '}');
            if (r < 0)
                return r;
            if (r == 0)
                break;
        }
    }
    for (int k = 0; k < fields; k++) {
        if (!(seen & ((uint64_t)1 << k))) {
            int r = append_null(t, child(t, n, k));
            if (r < 0)
                return r;
        }
    }
    set_bit(n->col.valid, slot);
    n->count = slot + 1;
    return 0;
}

/* A JSON array at c->p into an array's slot. */
static int tree_array(Cursor *c, Tree *t, Node *n, int depth) {
    Py_ssize_t slot = n->count;
    if (depth > MAX_DEPTH || node_room(n, slot) < 0)
        return depth > MAX_DEPTH ? -1 : -2;
    Node *element = child(t, n, 0);
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
    } else {
        for (;;) {
            int r = tree_value(c, t, element, depth + 1);
            if (r < 0)
                return r;
            r = next_member(c, ']');
            if (r < 0)
                return r;
            if (r == 0)
                break;
        }
    }
    if (end_offset(t, n, slot, element->count) < 0)
        return -1;
    set_bit(n->col.valid, slot);
    n->count = slot + 1;
    return 0;
}

/* A map key's text, by its bytes (the key node's text from `text`, between its offsets). */
typedef struct {
    const char *text;
    int32_t length;
    Py_ssize_t index;
} MapKey;

static int compare_keys(const void *a, const void *b) {
    const MapKey *x = a, *y = b;
    int order = memcmp(x->text, y->text, (size_t)(x->length < y->length ? x->length : y->length));
    if (order != 0)
        return order;
    if (x->length != y->length)
        return x->length < y->length ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Which of the `n` keys (slots [first, first + n) of the key node) appear again later: lost[i]
 * set for those (the last entry of a key wins). 1 when any does, 0 when none, -2 out of memory.
 * Few keys are compared pairwise, more sorted (n log n). */
static int lost_keys(const Node *keys, Py_ssize_t first, Py_ssize_t n, uint8_t **lost) {
    const int32_t *o = keys->col.offsets + first;
    const char *text = keys->col.text.data != NULL ? keys->col.text.data : "";
    int any = 0;
    *lost = NULL;
    if (n <= 16) {
        for (Py_ssize_t i = 0; i + 1 < n && !any; i++)
            for (Py_ssize_t j = i + 1; j < n && !any; j++)
                any = o[i + 1] - o[i] == o[j + 1] - o[j] &&
                      memcmp(text + o[i], text + o[j], (size_t)(o[i + 1] - o[i])) == 0;
        if (!any)
            return 0;
    }
    MapKey *order = malloc(sizeof(MapKey) * (size_t)n);
    *lost = calloc((size_t)n, 1);
    if (order == NULL || *lost == NULL) {
        free(order);
        return -2;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        order[i] = (MapKey){text + o[i], o[i + 1] - o[i], i};
    qsort(order, (size_t)n, sizeof(MapKey), compare_keys);
    any = 0;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        if (order[i].length == order[i + 1].length &&
            memcmp(order[i].text, order[i + 1].text, (size_t)order[i].length) == 0) {
            (*lost)[order[i].index] = 1; /* a later entry has its key */
            any = 1;
        }
    }
    free(order);
    return any;
}

/* A map's entries at c->p (just after its '{'): each key into the key node, each value into
 * the value node; with `lost`, the entries it marks are validated only (their values converted
 * once already). */
static int map_members(Cursor *c, Tree *t, Node *keys, Node *values, const uint8_t *lost,
                       int depth) {
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (Py_ssize_t i = 0;; i++) {
        if (c->p >= c->end || *c->p != '"')
            return -1;
        c->p++;
        int r;
        if (lost != NULL && lost[i]) {
            r = scan_string(c, NULL);
        } else {
            Py_ssize_t slot = keys->count;
            if (node_room(keys, slot) < 0)
                return -2;
            r = scan_string(c, &keys->col.text); /* a lone surrogate escape: -1 */
            if (r == 0 && end_offset(t, keys, slot, keys->col.text.used) < 0)
                r = -1;
            if (r == 0) {
                set_bit(keys->col.valid, slot);
                keys->count = slot + 1;
            }
        }
        if (r < 0)
            return r;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':')
            return -1;
        c->p++;
        skip_ws(c);
        r = lost != NULL && lost[i] ? skip_value(c, depth + 1) : tree_value(c, t, values, depth + 1);
        if (r < 0)
            return r;
        r = next_member(c, '}');
        if (r <= 0)
            return r;
    }
}

/* A JSON object at c->p into a map's slot (see the section's comment for repeated keys). */
static int tree_map(Cursor *c, Tree *t, Node *n, int depth) {
    Py_ssize_t slot = n->count;
    if (depth > MAX_DEPTH || node_room(n, slot) < 0)
        return depth > MAX_DEPTH ? -1 : -2;
    Node *keys = child(t, n, 0), *values = child(t, n, 1);
    int self = (int)(n - t->nodes);
    Py_ssize_t base = push_marks(t, self + 1, n->end);
    if (base < 0)
        return -2;
    const uint8_t *open = c->p;
    Py_ssize_t first = keys->count;
    c->p++;
    int r = map_members(c, t, keys, values, NULL, depth);
    Py_ssize_t entries = keys->count - first;
    uint8_t *lost = NULL;
    if (r == 0 && entries > 1) {
        r = lost_keys(keys, first, entries, &lost);
        if (r > 0) { /* again, the entries that win only */
            undo_marks(t, base, self + 1, n->end);
            c->p = open + 1;
            r = map_members(c, t, keys, values, lost, depth);
        }
        free(lost);
    }
    t->marks.used = base;
    if (r < 0)
        return r;
    if (end_offset(t, n, slot, keys->count) < 0)
        return -1;
    set_bit(n->col.valid, slot);
    n->count = slot + 1;
    return 0;
}

static int tree_value(Cursor *c, Tree *t, Node *n, int depth) {
    if (c->p >= c->end)
        return -1;
    uint8_t b = *c->p;
    char kind = n->col.kind;
    if (kind != 'R' && kind != 'A' && kind != 'M')
        return tree_scalar(c, t, n);
    if (b == 'n') {
        if (literal(c, "null", 4) < 0)
            return -1;
        return append_null(t, n);
    }
    if (kind == 'R')
        return b == '{' ? tree_row(c, t, n, depth) : -1;
    if (kind == 'A')
        return b == '[' ? tree_array(c, t, n, depth) : -1;
    return b == '{' ? tree_map(c, t, n, depth) : -1;
}

/* One record into the root's children: 0 decoded, -1 left, -2 out of memory. */
static int scan_tree_record(Cursor *c, Tree *t) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != '{')
        return -1;
    int r = tree_row(c, t, &t->nodes[0], 1);
    if (r < 0)
        return r;
    skip_ws(c);
    return c->p == c->end ? 0 : -1; /* exactly one document */
}

/* A column's description into the tree, its children after it (preorder): (name, kind,
 * precision, scale) for a scalar, with a fifth item for a row (its fields' descriptions), an
 * array (its element's) or a map (its key's, a text, and its value's). The node's index, or -1
 * with an exception set. */
static int tree_column(PyObject *spec, Tree *t, int depth) {
    if (t->n_nodes >= MAX_TREE_NODES || depth > MAX_TREE_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "the columns' tree is too large or too deep");
        return -1;
    }
    if (!PyTuple_Check(spec) || (PyTuple_GET_SIZE(spec) != 4 && PyTuple_GET_SIZE(spec) != 5)) {
        PyErr_SetString(PyExc_TypeError,
                        "a column must be a (name, kind, precision, scale[, children]) tuple");
        return -1;
    }
    int index = t->n_nodes++;
    Node *n = &t->nodes[index];
    PyObject *children = PyTuple_GET_SIZE(spec) == 5 ? PyTuple_GET_ITEM(spec, 4) : NULL;
    const char *kind = NULL;
    Py_ssize_t kind_len = 0;
    if (children != NULL) {
        const char *name;
        Py_ssize_t name_len;
        int precision, scale;
        if (!PyArg_ParseTuple(spec, "y#s#iiO", &name, &name_len, &kind, &kind_len, &precision,
                              &scale, &children))
            return -1;
        Py_ssize_t want = kind_len == 1 && kind[0] == 'A' ? 1 : kind_len == 1 && kind[0] == 'M' ? 2
                          : -1;
        if (kind_len != 1 || !strchr("RAM", kind[0]) || !PyTuple_Check(children) ||
            (want >= 0 && PyTuple_GET_SIZE(children) != want) ||
            (kind[0] == 'R' && PyTuple_GET_SIZE(children) > MAX_ROW_FIELDS)) {
            PyErr_Format(PyExc_ValueError, "malformed nested column %R", spec);
            return -1;
        }
        n->col.name = name;
        n->col.name_len = name_len;
        n->col.kind = kind[0];
    } else if (text_column(spec, &n->col) < 0) {
        return -1;
    }
    n->count = n->capacity = 0;
    n->n_children = children != NULL ? (int)PyTuple_GET_SIZE(children) : 0;
    if (t->n_kids + n->n_children > MAX_TREE_NODES) {
        PyErr_SetString(PyExc_ValueError, "the columns' tree is too large or too deep");
        return -1;
    }
    n->first = t->n_kids;
    t->n_kids += n->n_children;
    for (int k = 0; k < n->n_children; k++) {
        int at = tree_column(PyTuple_GET_ITEM(children, k), t, depth + 1);
        if (at < 0)
            return -1;
        t->kids[n->first + k] = at;
    }
    if (n->col.kind == 'M' && !is_text(child(t, n, 0)->col.kind)) {
        PyErr_SetString(PyExc_ValueError, "a map's keys must be text");
        return -1;
    }
    t->nodes[index].end = t->n_nodes;
    return index;
}

/* A node's result: (slots, buffers, [children's results]); None on failure (an exception set). */
static PyObject *node_result(Tree *t, Node *n) {
    Py_ssize_t count = n->count, bits = (count + 7) / 8;
    char kind = n->col.kind;
    static const char empty[4] = {0};
    const void *offsets = n->col.offsets ? (const void *)n->col.offsets : empty;
    const void *valid = n->col.valid ? (const void *)n->col.valid : empty;
    PyObject *buffers;
    if (is_text(kind))
        buffers = Py_BuildValue("(NNN)", as_bytes(valid, bits),
                                as_bytes(offsets, sizeof(int32_t) * (count + 1)),
                                as_bytes(n->col.text.data ? n->col.text.data : "", n->col.text.used));
    else if (kind == 'A' || kind == 'M')
        buffers = Py_BuildValue("(NN)", as_bytes(valid, bits),
                                as_bytes(offsets, sizeof(int32_t) * (count + 1)));
    else if (kind == 'R')
        buffers = Py_BuildValue("(N)", as_bytes(valid, bits));
    else
        buffers = Py_BuildValue("(NN)", as_bytes(valid, bits),
                                as_bytes(n->col.values ? n->col.values : empty,
                                         kind == 'b' ? bits : n->col.width * count));
    if (buffers == NULL)
        return NULL;
    PyObject *children = PyList_New(n->n_children);
    if (children == NULL) {
        Py_DECREF(buffers);
        return NULL;
    }
    for (int k = 0; k < n->n_children; k++) {
        PyObject *r = node_result(t, child(t, n, k));
        if (r == NULL) {
            Py_DECREF(buffers);
            Py_DECREF(children);
            return NULL;
        }
        PyList_SET_ITEM(children, k, r);
    }
    return Py_BuildValue("(nNN)", count, buffers, children);
}

PyDoc_STRVAR(scan_nested_doc,
    "scan_nested(validity, offsets, data, offset, length, columns, node_mode=False)\n"
    "    -> (decoded, [result per column])\n\n"
    "As scan(), for columns that may be nested: each (name: bytes, kind: str, precision: int,\n"
    "scale: int) for a scalar, or (name, 'R' | 'A' | 'M', 0, 0, children) for a row (its\n"
    "fields), an array (its element) or a map (its key, a text, and its value), the children\n"
    "described the same way. Each result is (slots, buffers, [children's results]): buffers\n"
    "(validity, values), (validity, offsets, bytes) for text, (validity, offsets) for an array\n"
    "or a map (offsets into its children's slots), (validity,) for a row. `node_mode`: a\n"
    "number in a text position leaves its record.");

static PyObject *scan_nested(PyObject *self, PyObject *args) {
    PyObject *validity_obj, *offsets_obj, *data_obj, *columns_obj;
    Py_ssize_t offset, length;
    int node_mode = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnnO|p", &validity_obj, &offsets_obj, &data_obj, &offset,
                          &length, &columns_obj, &node_mode))
        return NULL;
    if (!PyTuple_Check(columns_obj) || PyTuple_GET_SIZE(columns_obj) > MAX_ROW_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "columns must be a tuple of at most 64 columns");
        return NULL;
    }
    Tree *t = calloc(1, sizeof(Tree));
    Node *nodes = calloc(MAX_TREE_NODES, sizeof(Node));
    Batch batch;
    memset(&batch, 0, sizeof(batch));
    PyObject *result = NULL, *root_spec = NULL;
    uint8_t *decoded = NULL;
    Py_ssize_t *record_marks = NULL;
    if (t == NULL || nodes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    t->nodes = nodes;
    t->node_mode = node_mode;
    root_spec = Py_BuildValue("(y#siiO)", "", (Py_ssize_t)0, "R", 0, 0, columns_obj);
    if (root_spec == NULL || tree_column(root_spec, t, 0) < 0)
        goto done;
    if (get_batch(&batch, validity_obj, offsets_obj, data_obj, offset, length) < 0)
        goto done;
    Py_ssize_t bitmap_size = (length + 7) / 8;
    decoded = calloc((size_t)(bitmap_size ? bitmap_size : 1), 1);
    record_marks = malloc(sizeof(Py_ssize_t) * 2 * (size_t)t->n_nodes);
    if (decoded == NULL || record_marks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int failed = 0;
    Py_ssize_t bad = 0;
    Py_BEGIN_ALLOW_THREADS
    /* The record level's nodes hold a slot per record: room for all of them at once, and as
     * much (up to a bound: a table may have many nodes) for the others to start with. */
    Node *root = &t->nodes[0];
    for (int j = 1; j < t->n_nodes && !failed; j++) {
        Py_ssize_t room = length < 4096 ? length : 4096;
        if (room > 0 && node_room(&t->nodes[j], room - 1) < 0)
            failed = 1;
    }
    for (int k = 0; k < root->n_children && !failed; k++)
        if (length > 0 && node_room(child(t, root, k), length - 1) < 0)
            failed = 1;
    for (Py_ssize_t i = 0; i < length && !failed; i++) {
        const uint8_t *start, *stop;
        int present = record_bytes(&batch, i, &start, &stop);
        if (present < 0) {
            failed = 3;
            bad = offset + i;
            break;
        }
        for (int j = 0; j < t->n_nodes; j++) {
            record_marks[2 * j] = t->nodes[j].count;
            record_marks[2 * j + 1] = t->nodes[j].col.text.used;
        }
        int r = -1;
        if (present) {
            Cursor c = {start, stop};
            r = scan_tree_record(&c, t);
        }
        if (r == -2) {
            failed = 1;
            break;
        }
        if (t->overflow) {
            failed = 2;
            break;
        }
        if (r == 0) {
            set_bit(decoded, i);
            continue;
        }
        for (int j = 0; j < t->n_nodes; j++) { /* undo what the record wrote */
            t->nodes[j].count = record_marks[2 * j];
            t->nodes[j].col.text.used = record_marks[2 * j + 1];
        }
        t->marks.used = 0;
        if (append_null(t, root) < 0) {
            failed = 1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed == 1) {
        PyErr_NoMemory();
        goto done;
    }
    if (failed == 2) {
        PyErr_SetString(PyExc_OverflowError, "a nested column exceeds 2 GiB in one batch");
        goto done;
    }
    if (failed == 3) {
        PyErr_Format(PyExc_ValueError,
                     "the offsets of record %zd point outside the data buffer (or decrease)", bad);
        goto done;
    }
    Node *top = &t->nodes[0];
    PyObject *columns = PyList_New(top->n_children);
    if (columns == NULL)
        goto done;
    for (int k = 0; k < top->n_children; k++) {
        PyObject *r = node_result(t, child(t, top, k));
        if (r == NULL) {
            Py_DECREF(columns);
            goto done;
        }
        PyList_SET_ITEM(columns, k, r);
    }
    result = Py_BuildValue("(NN)", as_bytes(decoded, bitmap_size), columns);

done:
    Py_XDECREF(root_spec);
    if (t != NULL) {
        for (int j = 0; j < t->n_nodes; j++) {
            free(nodes[j].col.valid);
            free(nodes[j].col.values);
            free(nodes[j].col.offsets);
            free(nodes[j].col.text.data);
        }
        free(t->marks.data);
    }
    free(t);
    free(nodes);
    free(decoded);
    free(record_marks);
    release_batch(&batch);
    return result;
}

/*
 * The json format's exactness pass, for records decoded per record by Spark's JSON reader, which
 * reads a JSON number through a double where a text is wanted and cannot give a DECIMAL that
 * overflows as null. A record whose declared fields hold such a number comes out rewritten; the
 * others are left as they are. Along the table's type tree (nested rows, arrays, maps):
 *
 *   STRING: a number is quoted, so its text is what Flink keeps: the number as written.
 *   DECIMAL(p, s): a number (or a string holding one) of 10^(38 - s) or more becomes null, what
 *       Flink gives for a value beyond any precision; one with an exponent of 1000 or more in
 *       magnitude that rounds to zero at scale s becomes 0 (rescaling it costs Spark's reader
 *       seconds or more per record); a string with a comma is put in an array, so that Spark's
 *       reader fails the record as Flink does (it would drop the commas); one whose content has
 *       spaces around it or escapes is written trimmed and unescaped, as Flink reads it.
 *
 *   INT, BIGINT: a number with a fraction or an exponent becomes its double's value truncated
 *       toward zero (as Jackson converts it for Flink) when that is in range, and is left as it
 *       is (the record dirty, as in Flink) when not.
 *   FLOAT, DOUBLE: a number beyond a double's range is quoted (Spark's reader then gives
 *       infinity, as Flink does; it cannot convert the number itself).
 *
 * In node mode (Flink's node-based reading, which its changelog formats' envelopes go through)
 * a number in a STRING position is quoted as that reading gives it, which depends on whether the
 * table has a DECIMAL (NODE_DECIMALS: node_number_text; NODE_DOUBLES: node_double_text), and a
 * DECIMAL string is not trimmed.
 *
 * In maps mode (for Arrow's parser, which reads no maps and no boolean as text), every record
 * the pass takes comes out, rewritten or not: a MAP object becomes the array of its entries (see
 * rewrite_map) and true or false in a STRING position is quoted; a record with a MAP that is no
 * object, has a key with an escape or repeats a key is left (null).
 *
 * A record that is not one well-formed JSON document is left as it is (its decoding reports it).
 */
typedef struct {
    uint8_t kind;         /* 'R' row, 'A' array, 'M' map, 'S' string, 'D' decimal, 'I' INT,
                             'L' BIGINT, 'F' FLOAT or DOUBLE, 'X' other */
    uint8_t scale;
    uint16_t n_children;  /* rows: fields; arrays, maps: 1 (element, value) */
    uint32_t first_child; /* index of the first child node */
    uint32_t name_at, name_len; /* the field name of a row's child, in the names buffer */
} TypeNode;

#define TYPE_NODE_SIZE 16
#define EXPONENT_LIMIT 1000
/* Node mode: Jackson reads a number with a fraction as a BigDecimal (the table has a DECIMAL
 * somewhere) or as a double (it has none). */
#define NODE_DECIMALS 1
#define NODE_DOUBLES 2

typedef struct {
    const TypeNode *nodes;
    Py_ssize_t n_nodes;
    const char *names;
    const uint8_t *copied; /* the record's bytes before it are in out */
    Buffer *out;
    Buffer key;            /* scratch: an unescaped key */
    int changed;
    int node_mode;         /* Flink's node-based reading (the changelog formats' envelopes):
                              NODE_DECIMALS or NODE_DOUBLES, how it reads a fraction; 0: not */
    Buffer text;           /* scratch: a number's text as Flink gives it */
    int maps;              /* for Arrow's parser: maps as arrays of entries (see rewrite_map) */
} Rewrite;

/* Replaces the bytes [from, to) of the record with text or, text NULL, with the bytes [lo, hi)
 * between the bytes open and close. */
static int replace(Rewrite *w, const uint8_t *from, const uint8_t *to, const char *text,
                   const uint8_t *lo, const uint8_t *hi, char open, char close) {
    Py_ssize_t kept = from - w->copied;
    Py_ssize_t inserted = text != NULL ? (Py_ssize_t)strlen(text) : (hi - lo) + 2;
    if (reserve(w->out, kept + inserted) < 0)
        return -2;
    char *o = w->out->data + w->out->used;
    memcpy(o, w->copied, (size_t)kept);
    o += kept;
    if (text != NULL) {
        memcpy(o, text, (size_t)inserted);
    } else {
        *o = open;
        memcpy(o + 1, lo, (size_t)(hi - lo));
        o[inserted - 1] = close;
    }
    w->out->used += kept + inserted;
    w->copied = to;
    w->changed = 1;
    return 0;
}

/* The decimal exponent of a number's leading significant digit (INT_MIN for zero). */
static long leading_exponent(const Number *n) {
    for (int i = 0; i < n->n_int; i++)
        if (n->int_digits[i] != '0')
            return (long)(n->n_int - i - 1) + n->exponent;
    for (int i = 0; i < n->n_frac; i++)
        if (n->frac_digits[i] != '0')
            return (long)(-i - 1) + n->exponent;
    return LONG_MIN;
}

/* What a DECIMAL of scale `scale` becomes for a number: NULL (as it is), "null" or "0". */
static const char *decimal_replacement(const Number *n, int scale) {
    long lead = leading_exponent(n);
    if (lead == LONG_MIN)
        return NULL;
    if (lead >= 38 - scale)
        return "null";
    if (n->exponent <= -EXPONENT_LIMIT && lead < -scale - 1)
        return "0";
    return NULL;
}

/* A string's content as Java's BigDecimal reads it ([+-]digits[.digits][e[+-]digits], one of the
 * digit runs possibly empty): 0 with n filled, -1 when it is not that. */
static int decimal_text(const uint8_t *p, const uint8_t *end, Number *n) {
    memset(n, 0, sizeof(*n));
    if (p < end && (*p == '+' || *p == '-'))
        n->negative = *p++ == '-';
    n->int_digits = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    n->n_int = (int)(p - n->int_digits);
    if (p < end && *p == '.') {
        n->frac_digits = ++p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        n->n_frac = (int)(p - n->frac_digits);
    }
    if (n->n_int + n->n_frac == 0)
        return -1;
    if (p < end && (*p == 'e' || *p == 'E') && scan_exponent(&p, end, n) < 0)
        return -1;
    return p == end ? 0 : -1;
}

/* A number's text as Flink's node-based JSON reading gives it for a STRING: an integer as
 * written (a zero as "0"), any other number as Java's BigDecimal.stripTrailingZeros().toString().
 * Returns 1 (into w->text), 0 to leave the number as it is (an exponent at the cap), -2 out of
 * memory. */
static int node_number_text(const Number *n, Buffer *out) {
    out->used = 0;
    if (n->exponent >= 100000 || n->exponent <= -100000)
        return 0;
    Py_ssize_t total = n->n_int + n->n_frac, first = -1, last = -1;
    for (Py_ssize_t i = 0; i < total; i++) {
        uint8_t d = i < n->n_int ? n->int_digits[i] : n->frac_digits[i - n->n_int];
        if (d != '0') {
            if (first < 0)
                first = i;
            last = i;
        }
    }
    if (reserve(out, total + 32) < 0)
        return -2;
    char *o = out->data;
    if (first < 0) {
        o[0] = '0';
        out->used = 1;
        return 1;
    }
    Py_ssize_t k = 0;
    if (n->negative)
        o[k++] = '-';
    if (n->frac_digits == NULL && !n->has_exponent) {
        memcpy(o + k, n->int_digits, (size_t)n->n_int);
        out->used = k + n->n_int;
        return 1;
    }
    long scale = -((long)n->n_int - 1 - (long)last + n->exponent);
    long length = (long)(last - first + 1);
    long adjusted = -scale + length - 1;
#define DIGIT(j) ((first + (j)) < n->n_int ? n->int_digits[first + (j)] \
                                            : n->frac_digits[first + (j) - n->n_int])
    if (scale >= 0 && adjusted >= -6) {
        if (length > scale) {
            for (long j = 0; j < length; j++) {
                if (j == length - scale)
                    o[k++] = '.';
                o[k++] = (char)DIGIT(j);
            }
        } else {
            o[k++] = '0';
            o[k++] = '.';
            for (long j = 0; j < scale - length; j++)
                o[k++] = '0';
            for (long j = 0; j < length; j++)
                o[k++] = (char)DIGIT(j);
        }
    } else {
        o[k++] = (char)DIGIT(0);
        if (length > 1) {
            o[k++] = '.';
            for (long j = 1; j < length; j++)
                o[k++] = (char)DIGIT(j);
        }
        k += snprintf(o + k, 24, adjusted > 0 ? "E+%ld" : "E%ld", adjusted);
    }
#undef DIGIT
    out->used = k;
    return 1;
}

/* A number's text as Flink's node-based reading gives it for a STRING when the table has no
 * DECIMAL (Jackson then reads a number with a fraction or an exponent as a double): an integer
 * as node_number_text writes it, any other number as Java's Double.toString() of its double
 * (Java 19's, which gives the shortest digits that read back as it): "100.0", "1.5", "1.0E-7",
 * "-0.0", "Infinity".
 * 1 (into out), -2 out of memory. */
static int node_double_text(const Number *n, Buffer *out) {
    if (n->frac_digits == NULL && !n->has_exponent)
        return node_number_text(n, out);
    double value;
    if (number_strtod(n, 0, &value) < 0)
        return -2;
    out->used = 0;
    if (reserve(out, 40) < 0)
        return -2;
    char *o = out->data;
    if (isinf(value)) {
        out->used = snprintf(o, 40, "%s", value < 0 ? "-Infinity" : "Infinity");
        return 1;
    }
    if (value == 0) {
        out->used = snprintf(o, 40, "%s", signbit(value) ? "-0.0" : "0.0");
        return 1;
    }
    /* Java's choice: of the decimals that read back as the double, those of the least length
     * (but 2 when that is 1), and of those the nearest: printf's correctly rounded digits at
     * each length from 2 on, the first that reads back. */
    char shortest[40];
    for (int precision = 1; precision <= 16; precision++) {
        snprintf(shortest, sizeof shortest, "%.*e", precision, value);
        if (strtod(shortest, NULL) == value)
            break;
    }
    /* shortest is [-]d[.ddd]e(+|-)x: its digits, and the power of ten of the first */
    char digits[24];
    int count = 0;
    const char *q = shortest + (shortest[0] == '-');
    for (; *q != 'e'; q++)
        if (*q != '.')
            digits[count++] = *q;
    long power = strtol(q + 1, NULL, 10);
    while (count > 1 && digits[count - 1] == '0')
        count--;
    Py_ssize_t k = 0;
    if (value < 0)
        o[k++] = '-';
    if (power >= -3 && power < 7) { /* 10^-3 <= |value| < 10^7: plain */
        if (power < 0) {
            o[k++] = '0';
            o[k++] = '.';
            for (long j = 0; j < -power - 1; j++)
                o[k++] = '0';
            for (int j = 0; j < count; j++)
                o[k++] = digits[j];
        } else {
            for (long j = 0; j <= power; j++)
                o[k++] = j < count ? digits[j] : '0';
            o[k++] = '.';
            if (count <= power + 1)
                o[k++] = '0';
            for (long j = power + 1; j < count; j++)
                o[k++] = digits[j];
        }
    } else { /* computerized scientific notation, a digit after the point at least */
        o[k++] = digits[0];
        o[k++] = '.';
        if (count == 1)
            o[k++] = '0';
        for (int j = 1; j < count; j++)
            o[k++] = digits[j];
        k += snprintf(o + k, 16, "E%ld", power);
    }
    out->used = k;
    return 1;
}

/* What Flink gives an INT (kind 'I') or BIGINT ('L') for a number with a fraction or an
 * exponent: 1 with the double's value truncated toward zero in text (Jackson's range check
 * first: (double)Long.MAX_VALUE is 2^63, which truncates to Long.MAX_VALUE), 0 when it is out of
 * range, -2 out of memory. */
static int truncated_integer(const Number *n, char kind, char text[32]) {
    double value;
    if (number_strtod(n, 0, &value) < 0)
        return -2;
    double low = kind == 'I' ? -2147483648.0 : -9223372036854775808.0;
    double high = kind == 'I' ? 2147483647.0 : 9223372036854775808.0;
    if (!(value >= low && value <= high)) /* also infinity */
        return 0;
    long long truncated = value >= 9223372036854775808.0 ? LLONG_MAX : (long long)value;
    snprintf(text, 32, "%lld", truncated);
    return 1;
}

static int rewrite_value(Cursor *c, Rewrite *w, const TypeNode *node, int depth);

/* The members of an object or the elements of an array at c->p, each rewritten along its node
 * (a row's field by name; NULL: not declared, only validated). */
static int rewrite_container(Cursor *c, Rewrite *w, const TypeNode *node, int depth) {
    uint8_t close = *c->p == '{' ? '}' : ']';
    if (depth > MAX_DEPTH)
        return -1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        const TypeNode *child = NULL;
        if (close == '}') {
            if (c->p >= c->end || *c->p != '"')
                return -1;
            c->p++;
            w->key.used = 0;
            int r = scan_string(c, node->kind == 'R' ? &w->key : NULL);
            if (r < 0)
                return r;
            if (node->kind == 'R') {
                for (uint32_t k = 0; k < node->n_children; k++) {
                    const TypeNode *field = &w->nodes[node->first_child + k];
                    if ((Py_ssize_t)field->name_len == w->key.used &&
                        (field->name_len == 0 ||
                         memcmp(w->names + field->name_at, w->key.data, field->name_len) == 0)) {
                        child = field;
                        break;
                    }
                }
            } else {
                child = &w->nodes[node->first_child];
            }
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':')
                return -1;
            c->p++;
            skip_ws(c);
        } else {
            child = &w->nodes[node->first_child];
        }
        int r = child != NULL ? rewrite_value(c, w, child, depth + 1) : skip_value(c, depth + 1);
        if (r < 0)
            return r;
        r = next_member(c, close);
        if (r <= 0)
            return r;
    }
}

/* Appends the record's bytes [w->copied, upto) and then `text` to the output; the record's
 * bytes resume at `resume`. */
static int emit(Rewrite *w, const uint8_t *upto, const char *text, const uint8_t *resume) {
    Py_ssize_t kept = upto - w->copied, inserted = (Py_ssize_t)strlen(text);
    if (reserve(w->out, kept + inserted) < 0)
        return -2;
    memcpy(w->out->data + w->out->used, w->copied, (size_t)kept);
    memcpy(w->out->data + w->out->used + kept, text, (size_t)inserted);
    w->out->used += kept + inserted;
    w->copied = resume;
    w->changed = 1;
    return 0;
}

/* A map entry's bounds: its key's content, its value. */
typedef struct {
    const uint8_t *key, *key_end, *value;
    Py_ssize_t index;
} Entry;

/* Entries by key bytes, then position: a repeated key's entries together, its last one last. */
static int compare_entries(const void *a, const void *b) {
    const Entry *x = *(const Entry *const *)a, *y = *(const Entry *const *)b;
    Py_ssize_t nx = x->key_end - x->key, ny = y->key_end - y->key;
    int order = memcmp(x->key, y->key, (size_t)(nx < ny ? nx : ny));
    if (order != 0)
        return order;
    if (nx != ny)
        return nx < ny ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The bounds of the members of the object at c->p (passed), validated; -1 for a key with an
 * escape (two keys can then be one without the same bytes) or malformed JSON. */
static int map_entries(Cursor *c, Entry **entries, Py_ssize_t *n, int depth) {
    Py_ssize_t capacity = 0;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        if (c->p >= c->end || *c->p != '"')
            return -1;
        const uint8_t *key = ++c->p;
        int r = scan_string(c, NULL);
        if (r < 0)
            return r;
        const uint8_t *key_end = c->p - 1;
        if (memchr(key, '\\', (size_t)(key_end - key)) != NULL)
            return -1;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':')
            return -1;
        c->p++;
        skip_ws(c);
        const uint8_t *value = c->p;
        r = skip_value(c, depth + 1);
        if (r < 0)
            return r;
        if (*n == capacity) {
            capacity = capacity ? 2 * capacity : 16;
            Entry *grown = realloc(*entries, sizeof(Entry) * (size_t)capacity);
            if (grown == NULL)
                return -2;
            *entries = grown;
        }
        (*entries)[*n] = (Entry){key, key_end, value, *n};
        (*n)++;
        r = next_member(c, '}');
        if (r <= 0)
            return r;
    }
}

/* 1 when two entries have the same key, 0 when none do, -2 out of memory. */
static int has_repeated_key(Entry *entries, Py_ssize_t n) {
    if (n < 2)
        return 0;
    Entry **order = malloc(sizeof(Entry *) * (size_t)n);
    if (order == NULL)
        return -2;
    for (Py_ssize_t i = 0; i < n; i++)
        order[i] = &entries[i];
    qsort(order, (size_t)n, sizeof(Entry *), compare_entries);
    int repeated = 0;
    for (Py_ssize_t i = 0; i + 1 < n && !repeated; i++) {
        const Entry *x = order[i], *y = order[i + 1];
        repeated = x->key_end - x->key == y->key_end - y->key &&
                   memcmp(x->key, y->key, (size_t)(x->key_end - x->key)) == 0;
    }
    free(order);
    return repeated;
}

/*
 * For Arrow's parser, which reads no maps: the MAP object at c->p written as the array of its
 * entries, [{"key": k, "value": v}, ...], in their order, each value rewritten along the map's
 * value node. -1 (the record left to the per-record decoding) for a key with an escape, a
 * repeated key (Flink converts every entry, so an earlier value that fails fails the record,
 * though the last one is kept) or malformed JSON.
 */
static int rewrite_map(Cursor *c, Rewrite *w, const TypeNode *node, int depth) {
    if (depth > MAX_DEPTH)
        return -1;
    const uint8_t *open = c->p;
    Entry *entries = NULL;
    Py_ssize_t n = 0;
    int r = map_entries(c, &entries, &n, depth);
    if (r == 0) {
        r = has_repeated_key(entries, n);
        r = r == 1 ? -1 : r;
    }
    if (r == 0)
        r = emit(w, open, "[", open);
    for (Py_ssize_t i = 0; i < n && r == 0; i++) {
        const Entry *e = &entries[i];
        r = emit(w, w->copied, i == 0 ? "{\"key\":" : ",{\"key\":", e->key - 1);
        if (r == 0)
            r = emit(w, e->key_end + 1, ",\"value\":", e->value);
        Cursor value = {e->value, c->end};
        if (r == 0)
            r = rewrite_value(&value, w, &w->nodes[node->first_child], depth + 1);
        if (r == 0)
            r = emit(w, value.p, "}", value.p);
    }
    if (r == 0)
        r = emit(w, w->copied, "]", c->p);
    free(entries);
    return r;
}

static int rewrite_value(Cursor *c, Rewrite *w, const TypeNode *node, int depth) {
    if (c->p >= c->end)
        return -1;
    uint8_t b = *c->p;
    int is_number = b == '-' || (b >= '0' && b <= '9');
    switch (node->kind) {
    case 'M':
        if (w->maps) {
            if (b == '{')
                return rewrite_map(c, w, node, depth);
            if (b != 'n')
                return -1; /* no object (Arrow's parser would read [] as an empty map) */
        }
        /* fall through */
    case 'R':
        if (b == '{')
            return rewrite_container(c, w, node, depth);
        break;
    case 'A':
        if (b == '[')
            return rewrite_container(c, w, node, depth);
        break;
    case 'S':
        if (w->maps && (b == 't' || b == 'f')) { /* Arrow's parser reads no boolean as text */
            const uint8_t *start = c->p;
            if (b == 't' ? literal(c, "true", 4) < 0 : literal(c, "false", 5) < 0)
                return -1;
            return replace(w, start, c->p, NULL, start, c->p, '"', '"');
        }
        if (is_number) {
            const uint8_t *start = c->p;
            Number n;
            if (scan_number(c, &n) < 0)
                return -1;
            if (!w->node_mode)
                return replace(w, start, c->p, NULL, start, c->p, '"', '"');
            int r = w->node_mode == NODE_DOUBLES ? node_double_text(&n, &w->text)
                                                 : node_number_text(&n, &w->text);
            if (r <= 0)
                return r;
            const uint8_t *text = (const uint8_t *)w->text.data;
            return replace(w, start, c->p, NULL, text, text + w->text.used, '"', '"');
        }
        break;
    case 'I': case 'L': case 'F':
        if (is_number) {
            const uint8_t *start = c->p;
            Number n;
            if (scan_number(c, &n) < 0)
                return -1;
            if (n.frac_digits == NULL && !n.has_exponent)
                return 0;
            if (node->kind == 'F') {
                double value;
                if (leading_exponent(&n) < 308 || n.exponent <= -100000)
                    return 0;
                if (number_strtod(&n, 0, &value) < 0)
                    return -2;
                return isinf(value) ? replace(w, start, c->p, NULL, start, c->p, '"', '"') : 0;
            }
            char text[32];
            int r = truncated_integer(&n, (char)node->kind, text);
            return r == 1 ? replace(w, start, c->p, text, NULL, NULL, 0, 0) : r;
        }
        break;
    case 'D': {
        const uint8_t *start = c->p;
        Number n;
        const char *text;
        if (is_number) {
            if (scan_number(c, &n) < 0)
                return -1;
            text = decimal_replacement(&n, node->scale);
            return text != NULL ? replace(w, start, c->p, text, NULL, NULL, 0, 0) : 0;
        }
        if (b != '"')
            break;
        /* A string: its content unescaped and trimmed as Java's trim() does, as Flink reads it. */
        c->p++;
        const uint8_t *content = c->p;
        w->key.used = 0;
        int r = scan_string(c, &w->key);
        if (r < 0)
            return r;
        const uint8_t *lo = (const uint8_t *)w->key.data, *hi = lo + w->key.used;
        if (w->key.used == 0)
            return 0;
        while (!w->node_mode && lo < hi && *lo <= 0x20) /* the node-based reading does not trim */
            lo++;
        while (!w->node_mode && hi > lo && hi[-1] <= 0x20)
            hi--;
        if (decimal_text(lo, hi, &n) < 0) {
            /* Spark's reader drops the commas of a decimal's text, Flink's fails it */
            if (memchr(lo, ',', (size_t)(hi - lo)) != NULL)
                return replace(w, start, c->p, NULL, start, c->p, '[', ']');
            return 0;
        }
        text = decimal_replacement(&n, node->scale);
        if (text != NULL)
            return replace(w, start, c->p, text, NULL, NULL, 0, 0);
        if (hi - lo != c->p - 1 - content) /* trimmed, or escaped */
            return replace(w, start, c->p, NULL, lo, hi, '"', '"');
        return 0;
    }
    }
    return skip_value(c, depth);
}

PyDoc_STRVAR(exact_doc,
    "exact(validity, offsets, data, offset, length, nodes, names, node_mode=0, maps=False)\n"
    "    -> (changed, offsets, data)\n\n"
    "The json format's exactness pass over records [offset, offset + length) of a binary array\n"
    "(see the source): `nodes` packs the table's type tree (16 bytes a node, the root first),\n"
    "`names` its field names; `node_mode` 1 or 2 reads as Flink's node-based reading of a table\n"
    "with or without a DECIMAL. Returns the buffers of a binary array, valid where a record was\n"
    "rewritten; with `maps` (for Arrow's parser: maps as arrays of entries), valid for every\n"
    "record the pass takes, rewritten or not, and null for one it leaves.");

static PyObject *exact(PyObject *self, PyObject *args) {
    PyObject *validity_obj, *offsets_obj, *data_obj;
    Py_ssize_t offset, length;
    const char *nodes_buf, *names;
    Py_ssize_t nodes_len, names_len;
    int node_mode = 0, maps = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnny#y#|ip", &validity_obj, &offsets_obj, &data_obj, &offset,
                          &length, &nodes_buf, &nodes_len, &names, &names_len, &node_mode, &maps))
        return NULL;
    if (node_mode < 0 || node_mode > NODE_DOUBLES) {
        PyErr_Format(PyExc_ValueError, "node_mode must be 0, 1 or 2, not %d", node_mode);
        return NULL;
    }
    if (nodes_len == 0 || nodes_len % TYPE_NODE_SIZE != 0) {
        PyErr_SetString(PyExc_ValueError, "the type tree must be whole 16-byte nodes");
        return NULL;
    }
    Py_ssize_t n_nodes = nodes_len / TYPE_NODE_SIZE;
    TypeNode *nodes = calloc((size_t)n_nodes, sizeof(TypeNode));
    if (nodes == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n_nodes; i++) {
        const char *q = nodes_buf + i * TYPE_NODE_SIZE;
        TypeNode *t = &nodes[i];
        t->kind = (uint8_t)q[0];
        t->scale = (uint8_t)q[1];
        memcpy(&t->n_children, q + 2, 2);
        memcpy(&t->first_child, q + 4, 4);
        memcpy(&t->name_at, q + 8, 4);
        memcpy(&t->name_len, q + 12, 4);
        int parent = t->kind == 'R' || t->kind == 'A' || t->kind == 'M';
        if ((parent && (t->first_child <= i || t->first_child > n_nodes ||
                        t->n_children > n_nodes - t->first_child ||
                        (t->kind != 'R' && t->n_children != 1))) ||
            t->name_at > names_len || t->name_len > names_len - t->name_at ||
            !strchr("RAMSDILFX", t->kind ? t->kind : '?') || t->scale > 38) {
            free(nodes);
            PyErr_Format(PyExc_ValueError, "type tree node %zd is malformed", i);
            return NULL;
        }
    }
    Batch batch;
    PyObject *result = NULL;
    Py_ssize_t bitmap_size = 0;
    uint8_t *changed = NULL;
    int32_t *out_offsets = NULL;
    Buffer out = {0};
    Rewrite w = {nodes, n_nodes, names, NULL, &out, {0}, 0, node_mode, {0}, maps};
    if (get_batch(&batch, validity_obj, offsets_obj, data_obj, offset, length) < 0)
        goto done;
    bitmap_size = (length + 7) / 8;
    changed = calloc((size_t)(bitmap_size ? bitmap_size : 1), 1);
    out_offsets = malloc(sizeof(int32_t) * (size_t)(length + 1));
    if (changed == NULL || out_offsets == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int failed = 0;
    Py_ssize_t bad = 0;
    out_offsets[0] = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < length && !failed; i++) {
        const uint8_t *start, *stop;
        int present = record_bytes(&batch, i, &start, &stop);
        Py_ssize_t mark = out.used;
        if (present < 0) {
            failed = 3;
            bad = offset + i;
            break;
        }
        if (present) {
            Cursor c = {start, stop};
            w.copied = start;
            w.changed = 0;
            skip_ws(&c);
            int r = c.p < c.end && *c.p == '{' ? rewrite_value(&c, &w, &nodes[0], 1) : -1;
            if (r == 0) {
                skip_ws(&c);
                r = c.p == c.end ? 0 : -1;
            }
            if (r == -2) {
                failed = 1;
                break;
            }
            if (r == 0 && (w.changed || maps)) { /* maps: every record it takes, as it is */
                Py_ssize_t rest = c.end - w.copied;
                if (reserve(&out, rest) < 0) {
                    failed = 1;
                    break;
                }
                memcpy(out.data + out.used, w.copied, (size_t)rest);
                out.used += rest;
                set_bit(changed, i);
            } else {
                out.used = mark;
            }
        }
        if (out.used > INT32_MAX) {
            failed = 2;
            break;
        }
        out_offsets[i + 1] = (int32_t)out.used;
    }
    Py_END_ALLOW_THREADS
    if (failed == 1)
        PyErr_NoMemory();
    else if (failed == 2)
        PyErr_SetString(PyExc_OverflowError, "the rewritten records exceed 2 GiB in one batch");
    else if (failed == 3)
        PyErr_Format(PyExc_ValueError,
                     "the offsets of record %zd point outside the data buffer (or decrease)", bad);
    else
        result = Py_BuildValue("(NNN)", as_bytes(changed, bitmap_size),
                               as_bytes(out_offsets, sizeof(int32_t) * (length + 1)),
                               as_bytes(out.data ? out.data : "", out.used));

done:
    free(nodes);
    free(changed);
    free(out_offsets);
    free(out.data);
    free(w.key.data);
    free(w.text.data);
    release_batch(&batch);
    return result;
}

PyDoc_STRVAR(scan_csv_doc,
    "scan_csv(validity, offsets, data, offset, length, columns, delimiter, quote, escape,\n"
    "         null_literal, comments) -> (decoded, [buffers per column])\n\n"
    "As scan(), for CSV records: `columns` in the record's field order; `quote` and `escape`\n"
    "are byte values or -1 for none, `null_literal` bytes or None, `comments` a bool.");

static PyObject *scan_csv(PyObject *self, PyObject *args) {
    PyObject *validity, *offsets, *data, *columns, *null_literal;
    Py_ssize_t offset, length;
    int delimiter, quote, escape, comments;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnnOiiiOp", &validity, &offsets, &data, &offset, &length,
                          &columns, &delimiter, &quote, &escape, &null_literal, &comments))
        return NULL;
    if (delimiter < 0 || delimiter > 0x7F || quote < -1 || quote > 0x7F || escape < -1 ||
        escape > 0x7F) {
        PyErr_SetString(PyExc_ValueError,
                        "the delimiter, quote and escape must be ASCII (quote, escape: or -1)");
        return NULL;
    }
    Csv csv = {(uint8_t)delimiter, quote, escape, NULL, 0, comments};
    if (null_literal != Py_None) {
        if (!PyBytes_Check(null_literal)) {
            PyErr_SetString(PyExc_TypeError, "null_literal must be bytes or None");
            return NULL;
        }
        csv.null_literal = PyBytes_AS_STRING(null_literal);
        csv.null_length = PyBytes_GET_SIZE(null_literal);
    }
    return scan_batch(validity, offsets, data, offset, length, columns, &csv, NULL, 0);
}

PyDoc_STRVAR(scan_protobuf_doc,
    "scan_protobuf(validity, offsets, data, offset, length, columns, fields)\n"
    "    -> (decoded, [buffers per column])\n\n"
    "As scan(), for serialized protobuf messages: `columns` are (name: bytes, kind: str of\n"
    "'ILfdbsy', unset_null: bool, enum names: ((number, name: bytes), ...) or None); `fields`\n"
    "every field of the message as (number, type as FieldDescriptor numbers it, column index\n"
    "or -1, flags: 1 leave the record when present, 2 a closed enum), by number ascending.");

static PyObject *scan_protobuf(PyObject *self, PyObject *args) {
    PyObject *validity, *offsets, *data, *columns, *fields_obj;
    Py_ssize_t offset, length;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnnOO", &validity, &offsets, &data, &offset, &length, &columns,
                          &fields_obj))
        return NULL;
    if (!PyTuple_Check(fields_obj) || PyTuple_GET_SIZE(fields_obj) > 1 << 20) {
        PyErr_SetString(PyExc_TypeError, "fields must be a tuple");
        return NULL;
    }
    Py_ssize_t n_columns = PyTuple_Check(columns) ? PyTuple_GET_SIZE(columns) : 0;
    ProtoSpec spec = {NULL, (int)PyTuple_GET_SIZE(fields_obj)};
    spec.fields = calloc((size_t)(spec.n_fields ? spec.n_fields : 1), sizeof(ProtoField));
    if (spec.fields == NULL)
        return PyErr_NoMemory();
    for (int k = 0; k < spec.n_fields; k++) {
        ProtoField *f = &spec.fields[k];
        PyObject *item = PyTuple_GET_ITEM(fields_obj, k);
        unsigned int number;
        if (!PyTuple_Check(item)) {
            free(spec.fields);
            PyErr_SetString(PyExc_TypeError, "a field must be a (number, type, column, flags) tuple");
            return NULL;
        }
        if (!PyArg_ParseTuple(item, "Iiii", &number, &f->type, &f->column, &f->flags)) {
            free(spec.fields);
            return NULL;
        }
        f->number = number;
        if (number == 0 || number > 536870911 || f->type < PB_DOUBLE || f->type > PB_SINT64 ||
            f->column < -1 || f->column >= n_columns ||
            (k > 0 && f->number <= spec.fields[k - 1].number)) {
            free(spec.fields);
            PyErr_Format(PyExc_ValueError, "field %d is malformed or out of order", k);
            return NULL;
        }
    }
    PyObject *result = scan_batch(validity, offsets, data, offset, length, columns, NULL, &spec, 0);
    free(spec.fields);
    return result;
}

PyDoc_STRVAR(scan_avro_doc,
    "scan_avro(validity, offsets, data, offset, length, columns) -> (decoded, [buffers per column])\n\n"
    "As scan(), for Avro datums (binary encoding) of the record of the flat `columns`, in the\n"
    "record's field order: (name: bytes, kind: str of 'sybBHILfdmDCtT', nullable: bool (a union\n"
    "of null and the type), precision: int, scale: int) each.");

static PyObject *scan_avro(PyObject *self, PyObject *args) {
    PyObject *validity, *offsets, *data, *columns;
    Py_ssize_t offset, length;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnnO", &validity, &offsets, &data, &offset, &length, &columns))
        return NULL;
    return scan_batch(validity, offsets, data, offset, length, columns, NULL, NULL, 1);
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"scan_nested", scan_nested, METH_VARARGS, scan_nested_doc},
    {"scan_csv", scan_csv, METH_VARARGS, scan_csv_doc},
    {"scan_protobuf", scan_protobuf, METH_VARARGS, scan_protobuf_doc},
    {"scan_avro", scan_avro, METH_VARARGS, scan_avro_doc},
    {"exact", exact, METH_VARARGS, exact_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_text_scan",
    "The record scanners: JSON (flat and nested), CSV, protobuf and Avro values into Arrow\n"
    "buffers.",
    -1, METHODS, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__text_scan(void) {
    for (int b = 0; b < 256; b++)
        SPECIAL[b] = (uint8_t)(b == '"' || b == '\\' || b >= 0x80);
    return PyModule_Create(&MODULE);
}

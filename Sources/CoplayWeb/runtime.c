// Runtime support for CoplayCore on wasm32 with no libc (Tools/wasm-core): an allocator, the
// memory functions, the 128-bit multiply and round. Small on purpose: the browser page is the
// only user, and its instances are few.
typedef unsigned long size_t;
typedef unsigned long long u64;
typedef unsigned int u32;
extern unsigned char __heap_base;
static unsigned char *heap_end;

// Free lists by power-of-two size class, 16 bytes to 1 GiB, so that every block freed is used
// again (a table that grows past a class leaves its old block to the next of that size).
#define CLASSES 27
typedef struct block { struct block *next; } block;
static block *free_lists[CLASSES];
typedef struct header { size_t size_class; size_t pad; } header;  // 16 bytes before each block

static int size_class(size_t size) {
    int c = 0;
    size_t s = 16;
    while (s < size && c < CLASSES - 1) { s <<= 1; c++; }
    return s >= size ? c : -1;
}

static void *from_top(size_t bytes) {
    if (!heap_end) heap_end = &__heap_base;
    unsigned char *start = (unsigned char *)(((size_t)heap_end + 15) & ~(size_t)15);
    if (bytes > (size_t)-1 - (size_t)start) return 0;  // past the 32-bit address space
    unsigned char *end = start + bytes;
    size_t have = __builtin_wasm_memory_size(0) * 65536;
    if ((size_t)end > have) {
        size_t pages = ((size_t)end - have + 65535) / 65536;
        if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return 0;
    }
    heap_end = end;
    return start;
}

void *malloc(size_t size) {
    int c = size_class(size);
    if (c >= 0 && free_lists[c]) {
        block *b = free_lists[c];
        free_lists[c] = b->next;
        return b;
    }
    size_t bytes = c >= 0 ? ((size_t)16 << c) : size;
    header *h = from_top(sizeof(header) + bytes);
    if (!h) return 0;
    h->size_class = c >= 0 ? (size_t)c : (size_t)-1;
    return h + 1;
}

void free(void *p) {
    if (!p) return;
    header *h = (header *)p - 1;
    if (h->size_class == (size_t)-1) return;  // over 1 GiB: wasm32 cannot hold two anyway
    block *b = p;
    b->next = free_lists[h->size_class];
    free_lists[h->size_class] = b;
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment > 16) { *out = 0; return 22; }
    void *p = malloc(size);
    *out = p;
    return p ? 0 : 12;
}

void *memcpy(void *d, const void *s, size_t n) {
    unsigned char *dd = d; const unsigned char *ss = s;
    while (n--) *dd++ = *ss++;
    return d;
}
void *memmove(void *d, const void *s, size_t n) {
    unsigned char *dd = d; const unsigned char *ss = s;
    if (dd < ss) { while (n--) *dd++ = *ss++; }
    else { dd += n; ss += n; while (n--) *--dd = *--ss; }
    return d;
}
void *memset(void *d, int v, size_t n) {
    unsigned char *dd = d;
    while (n--) *dd++ = (unsigned char)v;
    return d;
}
int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++) if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}
size_t strlen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }

// The low 128 bits of a 128-bit product, as compiler-rt's __multi3 (little-endian halves).
typedef struct { u64 lo, hi; } u128;
u128 __multi3(u64 alo, u64 ahi, u64 blo, u64 bhi) {
    u64 a0 = (u32)alo, a1 = alo >> 32, b0 = (u32)blo, b1 = blo >> 32;
    u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    u64 mid = (p00 >> 32) + (u32)p01 + (u32)p10;
    u128 r;
    r.lo = (mid << 32) | (u32)p00;
    r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32) + alo * bhi + ahi * blo;
    return r;
}

// Rounded half away from zero, as C's round.
double round(double x) {
    if (!(x == x) || x > 4503599627370496.0 || x < -4503599627370496.0) return x;
    double t = __builtin_trunc(x);
    if (x - t >= 0.5) return t + 1.0;
    if (t - x >= 0.5) return t - 1.0;
    return t;
}

// Embedded Swift's stack protector.
size_t __stack_chk_guard = 0x5a17c0de;
void __stack_chk_fail(void) { __builtin_trap(); }

// Randomness for the standard library's hashing seeds: from the host (the page's
// crypto.getRandomValues), imported as env.coplay_host_random.
__attribute__((import_module("env"), import_name("coplay_host_random")))
void coplay_host_random(void *buffer, size_t count);
void arc4random_buf(void *buffer, size_t count) { coplay_host_random(buffer, count); }

// Double("…") in Embedded Swift: the decimal forms a person types (a sign, digits, a point,
// an exponent) and inf, infinity, nan. Returns the end of what was read (the standard library
// accepts the text only if that is its end), or the start when nothing was.
static double pow10i(int e) {
    double r = 1.0, p = 10.0;
    int n = e < 0 ? -e : e;
    while (n) { if (n & 1) r *= p; p *= p; n >>= 1; }
    return e < 0 ? 1.0 / r : r;
}
static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static int word(const char *s, const char *w) {
    int n = 0;
    while (w[n]) { if (lower(s[n]) != w[n]) return 0; n++; }
    return n;
}
const char *_swift_stdlib_strtod_clocale(const char *s, double *out) {
    const char *p = s;
    int negative = 0;
    if (*p == '+' || *p == '-') negative = *p++ == '-';
    int n;
    if ((n = word(p, "infinity")) || (n = word(p, "inf"))) { *out = negative ? -__builtin_inf() : __builtin_inf(); return p + n; }
    if ((n = word(p, "nan"))) { *out = __builtin_nan(""); return p + n; }
    u64 mantissa = 0;
    int digits = 0, exponent = 0, any = 0;
    while (*p >= '0' && *p <= '9') {
        any = 1;
        if (digits < 19) { mantissa = mantissa * 10 + (u64)(*p - '0'); if (mantissa) digits++; }
        else exponent++;
        p++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            any = 1;
            if (digits < 19) { mantissa = mantissa * 10 + (u64)(*p - '0'); if (mantissa) digits++; exponent--; }
            p++;
        }
    }
    if (!any) { *out = 0; return s; }
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        int sign = 1, e = 0, edigits = 0;
        if (*q == '+' || *q == '-') sign = *q++ == '-' ? -1 : 1;
        while (*q >= '0' && *q <= '9') { if (e < 100000) e = e * 10 + (*q - '0'); q++; edigits++; }
        if (edigits) { exponent += sign * e; p = q; }
    }
    double value = (double)mantissa;
    if (exponent > 308 + 19) value = mantissa ? __builtin_inf() : 0;
    else if (exponent < -(324 + 19)) value = 0;
    else if (exponent < -300) value = value * pow10i(exponent + 300) * 1e-300;
    else value = value * pow10i(exponent);
    *out = negative ? -value : value;
    return p;
}

// Unicode's data, answered without its tables. Embedded Swift's standard library asks these
// when a String holds a scalar past ASCII: for canonical equivalence (comparing, hashing) and for
// grapheme clusters (Characters). Its tables (libswiftUnicodeDataTables) cost the module 26 KB
// gzipped, 7% of what a phone downloads, for a distinction the protocol does not draw: an item's
// identifier, a name or a session travel as UTF-8 bytes and meet the same bytes. So here every
// scalar is already in normal form with nothing to compose (Strings compare and hash scalar by
// scalar, as bytes do), and has no grapheme-break property of its own (a Character is one scalar;
// CR LF, controls, Hangul syllables and regional-indicator pairs are still the standard
// library's own rules). Native agents keep Unicode's full rules: two spellings of one text that
// differ in their bytes (é precomposed, e with a combining accent) are one identifier there and
// two here. Tools/web/smoke.mjs plays a group under such names and ids.
typedef unsigned short u16;
typedef unsigned char u8;
// Bits 3-10 the canonical combining class (0), bits 1-2 "not NFC" (0), bit 0 "not NFD" (0).
u16 _swift_stdlib_getNormData(u32 scalar) { (void)scalar; return 0; }
// Asked only of scalars not in NFD (none here): no decomposition.
u32 _swift_stdlib_getDecompositionEntry(u32 scalar) { (void)scalar; return 0; }
const u8 *const _swift_stdlib_nfd_decompositions = 0;
// No primary composite (the standard library's "none" is UINT32_MAX).
u32 _swift_stdlib_getComposition(u32 first, u32 second) { (void)first; (void)second; return 0xFFFFFFFF; }
// A value past the table's kinds (0-5) is "any": breaks before and after.
u8 _swift_stdlib_getGraphemeBreakProperty(u32 scalar) { (void)scalar; return 0xFF; }
_Bool _swift_stdlib_isInCB_Consonant(u32 scalar) { (void)scalar; return 0; }
_Bool _swift_stdlib_isExtendedPictographic(u32 scalar) { (void)scalar; return 0; }

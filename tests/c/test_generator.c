/* The generator against PyTorch's reference streams (tests/fixtures/generator_ref.txt,
 * written by tests/gen_generator_ref.py with torch 1.13; the runner runs from the repo
 * root). Every op line of the fixture must match bit for bit. */
#include "test.h"
#include "core/generator.h"

#include <inttypes.h>
#include <stdlib.h>

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001B3);
    }
    return h;
}
#define FNV_OFFSET UINT64_C(0xCBF29CE484222325)

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t f64_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    buf[len] = 0;
    return buf;
}

/* split a line in place into whitespace separated tokens */
static int tokenize(char *line, char ***toks_out) {
    int cap = 64, n = 0;
    char **toks = malloc(sizeof(char *) * (size_t)cap);
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        if (n == cap) {
            cap *= 2;
            toks = realloc(toks, sizeof(char *) * (size_t)cap);
        }
        toks[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r') p++;
        if (*p) *p++ = 0;
    }
    *toks_out = toks;
    return n;
}

/* -------------------------------------------------------- typed results */

enum vtype { T_F32, T_F64, T_U16, T_I64, T_I32, T_U32, T_U64 };

typedef struct {
    enum vtype type;
    int64_t n;
    void *data;
} result;

static size_t elem_size(enum vtype t) {
    switch (t) {
    case T_U16: return 2;
    case T_F32:
    case T_I32:
    case T_U32: return 4;
    default: return 8;
    }
}

static uint64_t elem_bits(const result *r, int64_t i) {
    switch (r->type) {
    case T_F32: return f32_bits(((float *)r->data)[i]);
    case T_F64: return f64_bits(((double *)r->data)[i]);
    case T_U16: return ((uint16_t *)r->data)[i];
    case T_I64: return (uint64_t)((int64_t *)r->data)[i];
    case T_I32: return (uint32_t)((int32_t *)r->data)[i];
    case T_U32: return ((uint32_t *)r->data)[i];
    case T_U64: return ((uint64_t *)r->data)[i];
    }
    return 0;
}

static uint64_t parse_expected(enum vtype t, const char *s) {
    switch (t) {
    case T_F32: return f32_bits((float)strtod(s, NULL));
    case T_F64: return f64_bits(strtod(s, NULL));
    case T_U16: return strtoul(s, NULL, 16) & 0xFFFF;
    case T_I64: return (uint64_t)strtoll(s, NULL, 10);
    case T_I32: return (uint32_t)(int32_t)strtol(s, NULL, 10);
    case T_U32: return (uint32_t)strtoul(s, NULL, 10);
    case T_U64: return strtoull(s, NULL, 10);
    }
    return 0;
}

static uint64_t result_hash(const result *r) {
    uint64_t h = FNV_OFFSET;
    size_t es = elem_size(r->type);
    for (int64_t i = 0; i < r->n; i++) {
        uint64_t b = elem_bits(r, i);
        uint8_t le[8];
        for (size_t k = 0; k < es; k++) le[k] = (uint8_t)(b >> (8 * k));
        h = fnv1a(h, le, es);
    }
    return h;
}

static void fmt_elem(const result *r, uint64_t bits, char *buf, size_t n) {
    if (r->type == T_F32) {
        float f;
        uint32_t u = (uint32_t)bits;
        memcpy(&f, &u, 4);
        snprintf(buf, n, "%a (0x%08" PRIx32 ")", (double)f, u);
    } else if (r->type == T_F64) {
        double d;
        memcpy(&d, &bits, 8);
        snprintf(buf, n, "%a", d);
    } else if (r->type == T_I64 || r->type == T_I32) {
        snprintf(buf, n, "%" PRId64, r->type == T_I32 ? (int64_t)(int32_t)(uint32_t)bits : (int64_t)bits);
    } else {
        snprintf(buf, n, "0x%" PRIx64, bits);
    }
}

/* ------------------------------------------------------------ the tests */

static int n_checked; /* fixture checks run */
static void report(int ok, int lineno, const char *what, const char *detail) {
    n_checked++;
    if (!ok)
        ct_test_fail(__FILE__, __LINE__, "generator_ref.txt line %d: %s%s%s", lineno, what, detail ? ": " : "",
                     detail ? detail : "");
}

static void check_result(const result *r, char **exp, int n_exp, int hashed, int lineno,
                         const char *case_name, const char *op) {
    char what[256], detail[512];
    snprintf(what, sizeof what, "[%s] %s n=%" PRId64, case_name, op, r->n);
    if (hashed) {
        uint64_t want = strtoull(exp[0], NULL, 16);
        uint64_t got = result_hash(r);
        snprintf(detail, sizeof detail, "hash 0x%016" PRIx64 ", expected 0x%016" PRIx64, got, want);
        report(got == want, lineno, what, got == want ? NULL : detail);
        return;
    }
    if (n_exp != r->n) {
        snprintf(detail, sizeof detail, "fixture has %d values", n_exp);
        report(0, lineno, what, detail);
        return;
    }
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < r->n; i++) {
        if (elem_bits(r, i) != parse_expected(r->type, exp[i])) {
            if (first < 0) first = i;
            bad++;
        }
    }
    if (bad) {
        char g[64], e[64];
        fmt_elem(r, elem_bits(r, first), g, sizeof g);
        fmt_elem(r, parse_expected(r->type, exp[first]), e, sizeof e);
        snprintf(detail, sizeof detail, "%" PRId64 " mismatches, first at [%" PRId64 "]: got %s, expected %s",
                 bad, first, g, e);
    }
    report(bad == 0, lineno, what, bad ? detail : NULL);
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* probabilities for multinomial: explicit list, "ones", or "@rand SEED Z" */
static void *make_probs(int is_f32, int64_t nd, int64_t nc, char **in, int n_in, int *ok) {
    int64_t total = nd * nc;
    void *p = malloc((size_t)total * (is_f32 ? 4 : 8));
    *ok = 1;
    if (n_in == 1 && strcmp(in[0], "ones") == 0) {
        for (int64_t i = 0; i < total; i++) {
            if (is_f32)
                ((float *)p)[i] = 1.0f;
            else
                ((double *)p)[i] = 1.0;
        }
    } else if (n_in == 3 && strcmp(in[0], "@rand") == 0) {
        ct_generator *pg = ct_generator_new(strtoull(in[1], NULL, 10));
        int64_t z = strtoll(in[2], NULL, 10);
        if (is_f32)
            ct_gen_uniform_f32(pg, (float *)p, total, 0.0, 1.0);
        else
            ct_gen_uniform_f64(pg, (double *)p, total, 0.0, 1.0);
        ct_generator_free(pg);
        for (int64_t i = 0; i < total; i++) {
            if ((i % nc) % z == 0) {
                if (is_f32)
                    ((float *)p)[i] = 0.0f;
                else
                    ((double *)p)[i] = 0.0;
            }
        }
    } else if (n_in == total) {
        for (int64_t i = 0; i < total; i++) {
            double v = strtod(in[i], NULL);
            if (is_f32)
                ((float *)p)[i] = (float)v;
            else
                ((double *)p)[i] = v;
        }
    } else {
        *ok = 0;
    }
    return p;
}

static void run_op(ct_generator *g, char **t, int nt, int lineno, const char *case_name) {
    /* locate '|' (inputs) and '=' / '#' (expected) */
    int bar = -1, sep = -1, hashed = 0;
    for (int i = 0; i < nt; i++) {
        if (bar < 0 && sep < 0 && strcmp(t[i], "|") == 0) bar = i;
        if (strcmp(t[i], "=") == 0 || strcmp(t[i], "#") == 0) {
            sep = i;
            hashed = t[i][0] == '#';
            break;
        }
    }
    if (sep < 0) {
        report(0, lineno, t[0], "malformed line");
        return;
    }
    int n_args = (bar >= 0 ? bar : sep) - 1;
    char **args = t + 1;
    char **in = bar >= 0 ? t + bar + 1 : NULL;
    int n_in = bar >= 0 ? sep - bar - 1 : 0;
    char **exp = t + sep + 1;
    int n_exp = nt - sep - 1;
    const char *op = t[0];
    if (n_args < 1) {
        report(0, lineno, op, "missing arguments");
        return;
    }
    int64_t n = strtoll(args[0], NULL, 10);
    result r = {T_F32, n, NULL};
    double a1 = n_args > 1 ? strtod(args[1], NULL) : 0.0;
    double a2 = n_args > 2 ? strtod(args[2], NULL) : 0.0;
    int64_t i1 = n_args > 1 ? strtoll(args[1], NULL, 10) : 0;
    int64_t i2 = n_args > 2 ? strtoll(args[2], NULL, 10) : 0;
    size_t nn = (size_t)(n > 0 ? n : 1);

    if (!strcmp(op, "uniform_f32") || !strcmp(op, "normal_f32") || !strcmp(op, "exponential_f32")) {
        r.type = T_F32;
        r.data = malloc(nn * 4);
        if (op[0] == 'u')
            ct_gen_uniform_f32(g, r.data, n, a1, a2);
        else if (op[0] == 'n')
            ct_gen_normal_f32(g, r.data, n, a1, a2);
        else
            ct_gen_exponential_f32(g, r.data, n, a1);
    } else if (!strcmp(op, "uniform_f64") || !strcmp(op, "normal_f64") || !strcmp(op, "exponential_f64")) {
        r.type = T_F64;
        r.data = malloc(nn * 8);
        if (op[0] == 'u')
            ct_gen_uniform_f64(g, r.data, n, a1, a2);
        else if (op[0] == 'n')
            ct_gen_normal_f64(g, r.data, n, a1, a2);
        else
            ct_gen_exponential_f64(g, r.data, n, a1);
    } else if (!strcmp(op, "uniform_f16") || !strcmp(op, "uniform_bf16") || !strcmp(op, "normal_f16") ||
               !strcmp(op, "normal_bf16")) {
        r.type = T_U16;
        r.data = malloc(nn * 2);
        int bf = strstr(op, "bf16") != NULL;
        if (op[0] == 'u')
            (bf ? ct_gen_uniform_bf16 : ct_gen_uniform_f16)(g, r.data, n, a1, a2);
        else
            (bf ? ct_gen_normal_bf16 : ct_gen_normal_f16)(g, r.data, n, a1, a2);
    } else if (!strcmp(op, "normal_f32_small_seq")) {
        /* n calls of normal_f32 with sizes k % 15 + 1 */
        int64_t total = 0;
        for (int64_t k = 0; k < n; k++) total += k % 15 + 1;
        r.type = T_F32;
        r.n = total;
        r.data = malloc((size_t)total * 4);
        float *o = r.data;
        for (int64_t k = 0; k < n; k++) {
            ct_gen_normal_f32(g, o, k % 15 + 1, a1, a2);
            o += k % 15 + 1;
        }
    } else if (!strncmp(op, "randint_", 8)) {
        int rc = -1;
        if (!strcmp(op + 8, "i64")) {
            r.type = T_I64;
            r.data = malloc(nn * 8);
            rc = ct_gen_randint_i64(g, r.data, n, i1, i2);
        } else if (!strcmp(op + 8, "i32")) {
            r.type = T_I32;
            r.data = malloc(nn * 4);
            rc = ct_gen_randint_i32(g, r.data, n, i1, i2);
        } else if (!strcmp(op + 8, "f32")) {
            r.type = T_F32;
            r.data = malloc(nn * 4);
            rc = ct_gen_randint_f32(g, r.data, n, i1, i2);
        } else if (!strcmp(op + 8, "f64")) {
            r.type = T_F64;
            r.data = malloc(nn * 8);
            rc = ct_gen_randint_f64(g, r.data, n, i1, i2);
        }
        if (rc != 0) {
            report(0, lineno, op, "returned an error");
            free(r.data);
            return;
        }
    } else if (!strcmp(op, "bernoulli_f32") || !strcmp(op, "bernoulli_f32t")) {
        r.type = T_F32;
        r.data = malloc(nn * 4);
        float *p = NULL;
        if (op[13] == 't') {
            if (n_in != n) {
                report(0, lineno, op, "bad inputs");
                free(r.data);
                return;
            }
            p = malloc(nn * 4);
            for (int64_t i = 0; i < n; i++) p[i] = (float)strtod(in[i], NULL);
        }
        ct_gen_bernoulli_f32(g, r.data, n, p, a1);
        free(p);
    } else if (!strcmp(op, "bernoulli_f64") || !strcmp(op, "bernoulli_f64t")) {
        r.type = T_F64;
        r.data = malloc(nn * 8);
        double *p = NULL;
        if (op[13] == 't') {
            if (n_in != n) {
                report(0, lineno, op, "bad inputs");
                free(r.data);
                return;
            }
            p = malloc(nn * 8);
            for (int64_t i = 0; i < n; i++) p[i] = strtod(in[i], NULL);
        }
        ct_gen_bernoulli_f64(g, r.data, n, p, a1);
        free(p);
    } else if (!strcmp(op, "randperm")) {
        r.type = T_I64;
        r.data = malloc(nn * 8);
        ct_gen_randperm_i64(g, r.data, n);
    } else if (!strcmp(op, "random32")) {
        r.type = T_U32;
        r.data = malloc(nn * 4);
        for (int64_t i = 0; i < n; i++) ((uint32_t *)r.data)[i] = ct_gen_random32(g);
    } else if (!strcmp(op, "random64")) {
        r.type = T_U64;
        r.data = malloc(nn * 8);
        for (int64_t i = 0; i < n; i++) ((uint64_t *)r.data)[i] = ct_gen_random64(g);
    } else if (!strcmp(op, "multinomial_f32") || !strcmp(op, "multinomial_f64")) {
        if (n_args != 4) {
            report(0, lineno, op, "bad arguments");
            return;
        }
        int is_f32 = op[13] == '3';
        int64_t nd = n, nc = i1, k = i2, repl = strtoll(args[3], NULL, 10);
        int ok;
        void *probs = make_probs(is_f32, nd, nc, in, n_in, &ok);
        if (!ok) {
            report(0, lineno, op, "bad inputs");
            free(probs);
            return;
        }
        r.type = T_I64;
        r.n = nd * k;
        r.data = malloc((size_t)(nd * k) * 8);
        int rc = is_f32 ? ct_gen_multinomial_f32(g, probs, nd, nc, k, (int)repl, r.data)
                        : ct_gen_multinomial(g, probs, nd, nc, k, (int)repl, r.data);
        free(probs);
        if (rc != 0) {
            report(0, lineno, op, "returned an error");
            free(r.data);
            return;
        }
    } else {
        report(0, lineno, op, "unknown op");
        return;
    }
    check_result(&r, exp, n_exp, hashed, lineno, case_name, op);
    free(r.data);
}

static void run_fixture(char *text) {
    ct_generator *g = NULL;
    int cap = CT_TORCH_CPU_AVX2;
    char case_name[128] = "-";
    int lineno = 0;
    char *line = text;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        char **t;
        int nt = tokenize(line, &t);
        if (nt == 0 || t[0][0] == '#') {
            /* comment / blank */
        } else if (!strcmp(t[0], "cap") && nt == 2) {
            cap = !strcmp(t[1], "default") ? CT_TORCH_CPU_DEFAULT : CT_TORCH_CPU_AVX2;
        } else if (!strcmp(t[0], "case") && nt == 3) {
            ct_generator_free(g);
            g = ct_generator_new(strtoull(t[2], NULL, 10));
            ct_generator_set_cpu_capability(g, cap);
            snprintf(case_name, sizeof case_name, "%s/%s", cap == CT_TORCH_CPU_AVX2 ? "avx2" : "default", t[1]);
        } else if (!g) {
            report(0, lineno, t[0], "no case before op");
        } else if (!strcmp(t[0], "state") && nt == 3) {
            uint8_t st[CT_GENERATOR_STATE_SIZE];
            ct_generator_get_state(g, st);
            uint64_t got = fnv1a(FNV_OFFSET, st, sizeof st);
            uint64_t want = strtoull(t[2], NULL, 16);
            char what[160], detail[128];
            snprintf(what, sizeof what, "[%s] get_state", case_name);
            snprintf(detail, sizeof detail, "hash 0x%016" PRIx64 ", expected 0x%016" PRIx64, got, want);
            report(got == want, lineno, what, got == want ? NULL : detail);
        } else if (!strcmp(t[0], "setstate") && nt == 2) {
            size_t len = strlen(t[1]) / 2;
            uint8_t *buf = malloc(len ? len : 1);
            int okhex = strlen(t[1]) % 2 == 0;
            for (size_t i = 0; okhex && i < len; i++) {
                int hi = hexval(t[1][2 * i]), lo = hexval(t[1][2 * i + 1]);
                if (hi < 0 || lo < 0) okhex = 0;
                buf[i] = (uint8_t)(hi * 16 + lo);
            }
            char what[160];
            snprintf(what, sizeof what, "[%s] set_state from torch bytes", case_name);
            report(okhex && ct_generator_set_state(g, buf, len) == CT_OK, lineno, what, NULL);
            free(buf);
        } else {
            run_op(g, t, nt, lineno, case_name);
        }
        free(t);
        line = nl ? nl + 1 : NULL;
    }
    ct_generator_free(g);
}


TEST(generator_reference_streams) {
    const char *path = getenv("CT_GENERATOR_REF");
    if (!path) path = "tests/fixtures/generator_ref.txt";
    char *text = read_file(path);
    if (!text) {
        ct_test_fail(__FILE__, __LINE__, "cannot read %s (run the tests from the repository root)", path);
        return;
    }
    n_checked = 0;
    run_fixture(text);
    free(text);
    if (n_checked < 200) ct_test_fail(__FILE__, __LINE__, "only %d fixture checks ran", n_checked);
}

/* checks that need no reference data */
TEST(generator_api) {

    CHECK(ct_generator_state_size() == 5056);
    ct_generator *d = ct_default_generator();
    CHECK(d != NULL && d == ct_default_generator());
    ct_manual_seed(77);
    CHECK(ct_generator_initial_seed(d) == 77 && ct_initial_seed() == 77);

    ct_generator *g = ct_generator_new(123);
    CHECK(ct_generator_initial_seed(g) == 123);
    ct_generator_manual_seed(g, UINT64_C(0xFFFFFFFF00000005));
    CHECK(ct_generator_initial_seed(g) == UINT64_C(0xFFFFFFFF00000005));
    ct_generator *g5 = ct_generator_new(5);
    CHECK(ct_gen_random32(g) == ct_gen_random32(g5)); /* only the low 32 bits seed mt19937 */

    /* save / restore mid-stream, including a pending cached normal */
    double tmp[3];
    ct_gen_normal_f64(g, tmp, 3, 0.0, 1.0);
    uint8_t st[CT_GENERATOR_STATE_SIZE], st2[CT_GENERATOR_STATE_SIZE];
    ct_generator_get_state(g, st);
    float a[40], b[40];
    double da, db;
    ct_gen_normal_f64(g, &da, 1, 0.0, 1.0);
    ct_gen_normal_f32(g, a, 40, 0.0, 1.0);
    CHECK(ct_generator_set_state(g5, st, sizeof st) == CT_OK);
    ct_gen_normal_f64(g5, &db, 1, 0.0, 1.0);
    ct_gen_normal_f32(g5, b, 40, 0.0, 1.0);
    CHECK(f64_bits(da) == f64_bits(db) && memcmp(a, b, sizeof a) == 0);
    ct_generator_get_state(g, st);
    ct_generator_get_state(g5, st2);
    CHECK(memcmp(st, st2, sizeof st) == 0);

    /* rejected states leave the generator alone */
    CHECK_ERR(ct_generator_set_state(g5, st, sizeof st - 1), "CPUGeneratorImplState of size 5056 but found the input RNG state size to be 5055");
    uint8_t bad[CT_GENERATOR_STATE_SIZE];
    memcpy(bad, st, sizeof bad);
    memset(bad + 8, 0, 4); /* left = 0 */
    CHECK(ct_generator_set_state(g5, bad, sizeof bad) != 0);
    memcpy(bad, st, sizeof bad);
    memset(bad + 12, 0, 4); /* seeded = 0 */
    CHECK(ct_generator_set_state(g5, bad, sizeof bad) != 0);
    memcpy(bad, st, sizeof bad);
    bad[16] = 0x71;
    bad[17] = 0x02; /* next = 625 */
    CHECK(ct_generator_set_state(g5, bad, sizeof bad) != 0);
    memcpy(bad, st, sizeof bad);
    bad[24 + 4] = 1; /* state word above 32 bits */
    CHECK(ct_generator_set_state(g5, bad, sizeof bad) != 0);
    ct_generator_get_state(g5, st2);
    CHECK(memcmp(st, st2, sizeof st) == 0);

    /* invalid arguments */
    int64_t out[8];
    double pr[4] = {0.1, -0.2, 0.3, 0.4};
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 2, 1, out) != 0);
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 2, 0, out) != 0);
    pr[1] = 0.2;
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 5, 0, out) != 0);
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 5, 1, out) == 0);
    pr[2] = 1.0 / 0.0;
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 2, 1, out) != 0);
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 2, 0, out) != 0);
    pr[2] = 0.0 / 0.0;
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 2, 1, out) != 0);
    CHECK(ct_gen_multinomial(g, pr, 1, 4, 2, 0, out) != 0);
    float pz[3] = {0.0f, 0.0f, 0.0f};
    CHECK(ct_gen_multinomial_f32(g, pz, 1, 3, 1, 1, out) != 0);
    CHECK(ct_gen_multinomial_f32(g, pz, 1, 3, 1, 0, out) != 0);
    CHECK(ct_gen_randint_i64(g, out, 4, 5, 5) != 0);
    int32_t o32[4];
    CHECK(ct_gen_randint_i32(g, o32, 4, 0, INT64_C(1) << 33) != 0);
    CHECK(ct_generator_set_cpu_capability(g, 7) != 0);

    /* half helpers */
    CHECK(ct_f32_to_f16_bits(1.0f) == 0x3C00 && ct_f16_bits_to_f32(0x3C00) == 1.0f);
    CHECK(ct_f32_to_f16_bits(65520.0f) == 0x7C00 && ct_f32_to_f16_bits(5.9604645e-08f) == 0x0001);
    CHECK(ct_f16_bits_to_f32(0x0001) == 5.9604645e-08f && ct_f16_bits_to_f32(0xFBFF) == -65504.0f);
    CHECK(ct_f32_to_bf16_bits(1.00390625f) == 0x3F80 && ct_f32_to_bf16_bits(1.01171875f) == 0x3F82);
    int roundtrip_ok = 1;
    for (uint32_t h = 0; h < 0x7C00; h++)
        if (ct_f32_to_f16_bits(ct_f16_bits_to_f32((uint16_t)h)) != h) roundtrip_ok = 0;
    CHECK(roundtrip_ok);

    ct_generator_free(g);
    ct_generator_free(g5);
    ct_generator_free(d); /* no-op for the default generator */
    CHECK(ct_default_generator() != NULL);
}


/* Helpers and drivers of the data-movement tests (movement.h). */
#include "movement.h"

size_t mv_es(MPI_Datatype type)
{
    return type == MPI_FLOAT ? 4 : 8;
}

const char *mv_tname(MPI_Datatype type)
{
    return type == MPI_FLOAT ? "float" : "double";
}

int mv_config(MPI_Comm comm, ZMPI_Coll coll, int algo, zmpi_eb_mode mode, double eb, ZMPI_Scope scope,
              size_t min_bytes, size_t chunk)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = mode;
    cfg.eb = mode == ZMPI_EB_NONE ? 0.0 : eb;
    cfg.scope = scope;
    cfg.min_bytes = min_bytes;
    cfg.chunk = chunk;
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        cfg.algorithm[k] = ZMPI_ALGO_DEFAULT;
    cfg.algorithm[coll] = algo;
    return ZMPI_Comm_set_config(comm, &cfg);
}

void mv_fill_noise(void *buf, size_t n, MPI_Datatype type, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 12345;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v = (double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        if (type == MPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = v;
    }
}

void mv_fill_garbage(void *buf, size_t n, MPI_Datatype type)
{
    for (size_t i = 0; i < n; i++) {
        if (type == MPI_FLOAT)
            ((float *)buf)[i] = -7.25e30f;
        else
            ((double *)buf)[i] = -7.25e300;
    }
}

double mv_range(const void *buf, size_t n, MPI_Datatype type)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(buf, i, type);
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    return hi >= lo ? hi - lo : 0.0;
}

double mv_bound(zmpi_eb_mode mode, double eb, const void *block, size_t n, MPI_Datatype type)
{
    return mode == ZMPI_EB_ABS ? eb : eb * mv_range(block, n, type);
}

void mv_check(mt_state *t, const char *what, const void *got, const void *ref, size_t n, MPI_Datatype type,
              double bound, double *ratio_worst)
{
    double worst = 0;
    size_t bad = mt_violations(got, ref, n, type, bound, &worst);
    MT_CHECK(t, bad == 0, "%s: %zu of %zu elements beyond %g (worst %g)", what, bad, n, bound, worst);
    if (ratio_worst && bound > 0 && worst / bound > *ratio_worst)
        *ratio_worst = worst / bound;
}

void mv_same(mt_state *t, const char *what, const void *got, const void *ref, size_t bytes)
{
    MT_CHECK(t, bytes == 0 || memcmp(got, ref, bytes) == 0, "%s: not byte-identical", what);
}

mv_run mv_run_make(mt_state *t, ZMPI_Coll coll, MPI_Datatype type, zmpi_eb_mode mode, double eb, ZMPI_Scope scope,
                   const char *aname)
{
    mv_run r = {t, coll, type, mode, eb, scope, aname, 0, 0, 0};
    return r;
}

mv_run mv_series(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, MPI_Datatype type, zmpi_eb_mode mode,
                 double eb, ZMPI_Scope scope, size_t min_bytes)
{
    mv_config(MPI_COMM_WORLD, coll, algo, mode, eb, scope, min_bytes, 4096);
    return mv_run_make(t, coll, type, mode, eb, scope, aname);
}

void mv_account(mv_run *r, const ZMPI_Stats *s0, const ZMPI_Stats *s1)
{
    r->raw += (double)(s1->bytes_raw - s0->bytes_raw);
    r->sent += (double)(s1->bytes_sent - s0->bytes_sent);
}

void mv_check_algo_at(mv_run *r, const char *what, const char *file, int line)
{
    if (!strcmp(r->aname, "default"))
        return;
    int id = ZMPI_Coll_algorithm_from_name(r->coll, r->aname);
    MT_CHECK_AT(r->t, file, line, id > 0, "%s: unknown algorithm %s", what, r->aname);
    if (id > 0)
        mt_check_ran_at(r->t, MPI_COMM_WORLD, r->coll,
                        r->t->size > 1 ? mt_algo_ran(r->coll, id, r->t->size) : ZMPI_ALGO_MPI, what, file, line);
}

void mv_check_call_at(mv_run *r, const char *what, int rc, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                      const char *file, int line)
{
    mv_check_compressed_at(r->t, what, rc, s0, s1, file, line);
    mv_check_algo_at(r, what, file, line);
}

void mv_describe(const mv_run *r, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s %s %s %s eb=%g", name, r->aname, mv_tname(r->type),
             r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb);
}

void mv_check_block(mv_run *r, const char *what, const void *got, const void *ref, size_t n, double global,
                    int hops, int exact)
{
    int cpr = !strcmp(r->aname, "cprp2p");
    double bound = mv_bound(r->mode, r->eb, ref, n, r->type), k = 1, w = 0;
    if (cpr && global >= 0 && r->scope == ZMPI_SCOPE_RESULT && r->mode == ZMPI_EB_REL)
        bound = r->eb * global;
    if (cpr && r->scope == ZMPI_SCOPE_MESSAGE && hops > 1) /* error per hop */
        k = r->mode == ZMPI_EB_ABS ? hops : hops * pow(1 + 2 * r->eb, hops);
    if (exact)
        bound = 0.0; /* the own block is copied, never decompressed */
    mv_check(r->t, what, got, ref, n, r->type, bound * k, &w);
    r->worst = w * k > r->worst ? w * k : r->worst; /* reported against the user's bound */
}

void mv_report(const mv_run *r, const char *coll, size_t n)
{
    double w = 0, raw = 0, sent = 0;
    MPI_Reduce(&r->worst, &w, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&r->raw, &raw, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&r->sent, &sent, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (r->t->rank == 0 && r->t->size > 1)
        printf("REPORT %-9s %-9s %-6s %s=%g scope=%s np=%d n=%zu: max err/bound %.3f, ratio %.2f\n", coll,
               r->aname, mv_tname(r->type), r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb,
               r->scope == ZMPI_SCOPE_MESSAGE ? "message" : "result", r->t->size, n, w,
               sent > 0 ? raw / sent : 0.0);
}

int mv_hops(int v)
{
    int h = 0;
    for (; v; v &= v - 1)
        h++;
    return h;
}

int mv_algorithms(mt_state *t, ZMPI_Coll coll, int least, int *ids, const char **names)
{
    int n = ZMPI_Coll_algorithms(coll, MV_MAXALGO, ids, names, NULL);
    MT_CHECK(t, n >= least, "%s has %d algorithms", ZMPI_Coll_name(coll), n);
    return n < MV_MAXALGO ? n : MV_MAXALGO;
}

mv_bufs mv_bufs_make(const mv_run *r, size_t in_elems, size_t out_elems, int noise, uint64_t seed, size_t offset)
{
    size_t es = mv_es(r->type);
    mv_bufs b = {malloc(in_elems * es + 8), malloc(in_elems * es + 8), malloc(out_elems * es + 8),
                 malloc(out_elems * es + 8)};
    if (noise)
        mv_fill_noise(b.orig, in_elems, r->type, seed);
    else
        mt_fill_field(b.orig, in_elems, r->type, offset);
    memcpy(b.send, b.orig, in_elems * es);
    mv_fill_garbage(b.got, out_elems, r->type);
    mv_fill_garbage(b.ref, out_elems, r->type);
    return b;
}

void mv_bufs_free(mv_bufs *b)
{
    free(b->send);
    free(b->orig);
    free(b->got);
    free(b->ref);
}

mv_layout mv_layout_make(mv_count_fn count, int kind, int base, int rank, int size, int to, int gap)
{
    mv_layout l;
    l.size = size;
    l.counts = calloc((size_t)size, sizeof(int));
    l.displs = calloc((size_t)size, sizeof(int));
    size_t pos = 0;
    for (int j = 0; j < size; j++)
        l.counts[j] = to ? count(kind, base, rank, j, size) : count(kind, base, j, rank, size);
    for (int k = 0; k < size; k++) { /* v: reverse order with gaps */
        int j = kind == 0 ? k : size - 1 - k;
        l.displs[j] = (int)pos;
        pos += (size_t)l.counts[j] + (size_t)(kind == 0 ? 0 : gap);
    }
    l.total = pos;
    return l;
}

void mv_layout_free(mv_layout *l)
{
    free(l->counts);
    free(l->displs);
}

double mv_layout_range(const mv_layout *l, const void *buf, MPI_Datatype type)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < l->size; i++)
        for (size_t e = 0; e < (size_t)l->counts[i]; e++) {
            double x = mt_get((const char *)buf + (size_t)l->displs[i] * mv_es(type), e, type);
            if (isfinite(x)) {
                lo = x < lo ? x : lo;
                hi = x > hi ? x : hi;
            }
        }
    return hi >= lo ? hi - lo : 0;
}

void mv_check_gaps(mt_state *t, const char *what, const void *got, const void *ref, const mv_layout *l,
                   MPI_Datatype type)
{
    size_t es = mv_es(type);
    for (size_t e = 0; e < l->total; e++) {
        int in_block = 0;
        for (int i = 0; i < l->size && !in_block; i++)
            in_block = e >= (size_t)l->displs[i] && e < (size_t)l->displs[i] + (size_t)l->counts[i];
        if (!in_block)
            MT_CHECK(t, !memcmp((const char *)got + e * es, (const char *)ref + e * es, es),
                     "%s: gap element %zu written", what, e);
    }
}

void mv_check_bytes_rooted(mv_run *r, const char *what, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                           const mv_layout *l, int root)
{
    int size = l->size, cpr = !strcmp(r->aname, "cprp2p");
    size_t es = mv_es(r->type);
    unsigned long long raw = s1->bytes_raw - s0->bytes_raw, all = 0, expect = 0;
    MPI_Allreduce(&raw, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        if (i != root)
            expect += (unsigned long long)l->counts[i] * es * (cpr ? mv_hops((i - root + size) % size) : 1);
    MT_CHECK(r->t, all == expect, "%s: %llu bytes compressed, expected %llu", what, all, expect);
}

void mv_sweep_rooted(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, mv_one_fn one)
{
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    const zmpi_eb_mode modes[2] = {ZMPI_EB_ABS, ZMPI_EB_REL};
    const double ebs[2] = {1e-3, 1e-4};
    const char *name = ZMPI_Coll_name(coll);
    int size = t->size, large = (1 << 20) / size + 1; /* >= 1 Mi elements in all, not divisible */
    int bases[] = {0, 1, 3, 12345};
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            mv_run r = mv_series(t, coll, algo, aname, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, 0);
            for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++) {
                one(&r, 0, bases[bi], 0, 0, 0);
                one(&r, 0, bases[bi], size - 1, bi == 3, 0);
            }
            one(&r, 1, 1000, size - 1, 0, 0); /* uneven with zeros and gaps */
            one(&r, 1, 1000, 0, 1, 0);
            one(&r, 2, 0, size / 2, 0, 0); /* fewer elements than ranks */
            mv_run q = mv_run_make(t, coll, r.type, r.mode, r.eb, r.scope, aname);
            one(&q, 0, large, ti == 0 ? 0 : size - 1, 0, 0);
            mv_report(&q, name, (size_t)large * (size_t)size);
        }
    /* message scope (the same bound for a compress-once algorithm; cprp2p:
     * one bound per hop) */
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            mv_run m = mv_series(t, coll, algo, aname, types[ti], modes[mi], mi ? 1e-3 : ebs[mi],
                                 ZMPI_SCOPE_MESSAGE, 0);
            one(&m, 1, 5000, ti ? 0 : size - 1, ti, 0);
            mv_run q = mv_series(t, coll, algo, aname, m.type, m.mode, ebs[mi], m.scope, 0);
            one(&q, 0, large, ti == 0 ? size - 1 : 0, 0, 0);
            mv_report(&q, name, (size_t)large * (size_t)size);
        }
    mv_hostile(t, coll, algo, aname, one, 5000, 1, 3000, 0);
}

void mv_hostile(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, mv_one_fn one, int plain_base,
                int v_kind, int v_base, int v_in_place)
{
    mv_run r = mv_series(t, coll, algo, aname, MPI_FLOAT, ZMPI_EB_ABS, 1e-12, ZMPI_SCOPE_RESULT, 0);
    one(&r, 0, plain_base, 0, 0, 1);
    r = mv_series(t, coll, algo, aname, MPI_DOUBLE, ZMPI_EB_REL, 1e-9, ZMPI_SCOPE_RESULT, 0);
    one(&r, v_kind, v_base, t->size - 1, v_in_place, 1);
    r = mv_series(t, coll, algo, aname, MPI_DOUBLE, ZMPI_EB_ABS, 1e-4, ZMPI_SCOPE_RESULT, 65536);
    one(&r, 1, 7000, 0, 0, 0);
}

void mv_every_root(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, mv_one_fn one)
{
    for (int root = 0; root < t->size; root++) {
        mv_run r = mv_series(t, coll, algo, aname, MPI_FLOAT, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_RESULT, 0);
        one(&r, 0, 2000, root, root % 2, 0);
        r = mv_series(t, coll, algo, aname, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, 0);
        one(&r, 1, 500, root, 0, 0);
    }
}

void mv_rooted_algorithms(mt_state *t, ZMPI_Coll coll, int least, mv_one_fn one)
{
    int ids[MV_MAXALGO];
    const char *names[MV_MAXALGO];
    int n = mv_algorithms(t, coll, least, ids, names);
    MT_CHECK(t, ZMPI_Coll_algorithm_from_name(coll, "cprp2p") > 0, "%s: no cprp2p algorithm", ZMPI_Coll_name(coll));
    for (int a = 0; a < n; a++) {
        mv_sweep_rooted(t, coll, ids[a], names[a], one);
        mv_every_root(t, coll, ids[a], names[a], one);
    }
}

/* Configures fallback case k of coll (n elements per block) and returns
 * its datatype. */
static MPI_Datatype fallback_case(ZMPI_Coll coll, int k, int n, MPI_Datatype two)
{
    if (k < 2) /* MPI_INT; a derived type of ints (derived types of floats are compressed: test_derived_coll) */
        mv_config(MPI_COMM_WORLD, coll, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, 0, 4096);
    else if (k == 2) /* below min_bytes */
        mv_config(MPI_COMM_WORLD, coll, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT,
                  (size_t)n * 8 + 1, 4096);
    else if (k == 3) /* no bound */
        mv_config(MPI_COMM_WORLD, coll, ZMPI_ALGO_DEFAULT, ZMPI_EB_NONE, 0, ZMPI_SCOPE_RESULT, 0, 4096);
    else /* ZMPI_ALGO_MPI */
        mv_config(MPI_COMM_WORLD, coll, ZMPI_ALGO_MPI, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, 0, 4096);
    return k == 0 ? MPI_INT : k == 1 ? two : MPI_DOUBLE;
}

void mv_fallbacks(mt_state *t, const mv_fallback_case *f)
{
    const char *name = ZMPI_Coll_name(f->coll);
    int size = t->size, root = size - 1, n = f->n;
    size_t out = f->out_elems * 8;
    char *send = mt_xmalloc(f->send_elems * 8), *a = mt_xmalloc(out), *b = mt_xmalloc(out);
    int *counts = mt_xmalloc((size_t)size * sizeof(int)), *displs = mt_xmalloc((size_t)size * sizeof(int));
    for (int i = 0; i < size; i++) {
        counts[i] = (f->v_pairwise ? t->rank + i : i) % 2 ? n / f->v_div : n;
        displs[i] = (f->v_reversed ? size - 1 - i : i) * n;
    }
    char what[64], vwhat[64];
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_INT, &two);
    MPI_Type_commit(&two);
    for (int k = 0; k < 5; k++) {
        MPI_Datatype type = fallback_case(f->coll, k, n, two);
        int mine = counts[t->rank];
        snprintf(what, sizeof what, "%s fallback %d", name, k);
        snprintf(vwhat, sizeof vwhat, "%sv fallback %d", name, k);
        mt_fill_field(send, f->send_elems, MPI_DOUBLE, f->fill_offset);
        memset(a, 0x5c, out);
        memset(b, 0x5c, out);
        ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
        f->call(1, send, n, type, a, n, type, NULL, NULL, root);
        ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
        f->call(0, send, n, type, b, n, type, NULL, NULL, root);
        mv_same(t, what, a, b, out);
        mt_check_fallback(t, MPI_COMM_WORLD, f->coll, &s0, &s1, k < 2, k == 2, k > 2, what);
        if (k == 2 && !f->v_small)
            continue; /* the v variant compresses regardless of min_bytes */
        memset(a, 0x5c, out);
        memset(b, 0x5c, out);
        f->call(1, send, mine, type, a, mine, type, counts, displs, root);
        if (k != 2 || size == 1) /* compressed regardless of min_bytes (from 2 ranks) */
            mt_check_ran(t, MPI_COMM_WORLD, f->coll, ZMPI_ALGO_MPI, vwhat);
        f->call(0, send, mine, type, b, mine, type, counts, displs, root);
        if (k != 2)
            mv_same(t, vwhat, a, b, out);
    }
    MPI_Type_free(&two);
    free(send);
    free(a);
    free(b);
    free(counts);
    free(displs);
}

mv_four mv_four_begin(ZMPI_Coll coll, size_t send_elems, size_t out_elems, size_t fill_offset)
{
    mv_four f;
    MPI_Type_contiguous(4, MPI_FLOAT, &f.four);
    MPI_Type_commit(&f.four);
    mv_config(MPI_COMM_WORLD, coll, ZMPI_ALGO_DEFAULT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, 0, 4096);
    f.send = mt_xmalloc(send_elems * 4);
    f.got = mt_xmalloc(out_elems * 4);
    f.ref = mt_xmalloc(out_elems * 4);
    mt_fill_field(f.send, send_elems, MPI_FLOAT, fill_offset);
    mv_fill_garbage(f.got, out_elems, MPI_FLOAT);
    return f;
}

void mv_four_end(mv_four *f)
{
    MPI_Type_free(&f->four);
    free(f->send);
    free(f->got);
    free(f->ref);
}

void mv_check_compressed_at(mt_state *t, const char *what, int rc, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                            const char *file, int line)
{
    MT_CHECK_AT(t, file, line, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK_AT(t, file, line, s1->compressed == s0->compressed + (t->size > 1), "%s: compressed path did not run",
                what);
}

void mv_derived_root(mt_state *t, ZMPI_Coll coll, mv_coll_fn call, int root, int n, size_t fill_offset)
{
    int gather = coll == ZMPI_COLL_GATHER, size = t->size, at_root = t->rank == root;
    size_t total = (size_t)n * (size_t)size, own = (size_t)root * (size_t)n;
    char what[64], what_own[80];
    snprintf(what, sizeof what, "%s derived root %s", ZMPI_Coll_name(coll), gather ? "sendtype" : "recvtype");
    snprintf(what_own, sizeof what_own, "%s (own)", what);
    mv_four f = gather ? mv_four_begin(coll, (size_t)n, total, fill_offset)
                       : mv_four_begin(coll, total, (size_t)n, fill_offset);
    call(0, f.send, n, MPI_FLOAT, f.ref, n, MPI_FLOAT, NULL, NULL, root);
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int rc;
    if (gather)
        rc = at_root ? call(1, f.send, n / 4, f.four, f.got, n, MPI_FLOAT, NULL, NULL, root)
                     : call(1, f.send, n, MPI_FLOAT, NULL, 0, MPI_FLOAT, NULL, NULL, root);
    else
        rc = at_root ? call(1, f.send, n, MPI_FLOAT, f.got, n / 4, f.four, NULL, NULL, root)
                     : call(1, NULL, 0, MPI_FLOAT, f.got, n, MPI_FLOAT, NULL, NULL, root);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    mv_check_compressed(t, what, rc, &s0, &s1);
    if (!gather) {
        mv_check(t, what, f.got, f.ref, (size_t)n, MPI_FLOAT, at_root ? 0.0 : 1e-2, NULL);
    } else if (at_root) { /* the own block, then the blocks before and after it */
        mv_check(t, what_own, f.got + own, f.ref + own, (size_t)n, MPI_FLOAT, 0.0, NULL);
        if (root > 0)
            mv_check(t, what, f.got, f.ref, own, MPI_FLOAT, 1e-2, NULL);
        mv_check(t, what, f.got + own + n, f.ref + own + n, total - own - (size_t)n, MPI_FLOAT, 1e-2, NULL);
    }
    mv_four_end(&f);
}

void mv_derived_sendtype(mt_state *t, ZMPI_Coll coll, mv_coll_fn call, int n, size_t send_elems,
                         size_t fill_offset)
{
    int size = t->size;
    size_t total = (size_t)n * (size_t)size;
    char what[64];
    snprintf(what, sizeof what, "%s derived sendtype", ZMPI_Coll_name(coll));
    mv_four f = mv_four_begin(coll, send_elems, total, fill_offset);
    call(0, f.send, n, MPI_FLOAT, f.ref, n, MPI_FLOAT, NULL, NULL, 0);
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int rc = t->rank % 2 ? call(1, f.send, n / 4, f.four, f.got, n, MPI_FLOAT, NULL, NULL, 0)
                         : call(1, f.send, n, MPI_FLOAT, f.got, n, MPI_FLOAT, NULL, NULL, 0);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    mv_check_compressed(t, what, rc, &s0, &s1);
    for (int i = 0; i < size; i++)
        mv_check(t, what, f.got + (size_t)i * (size_t)n, f.ref + (size_t)i * (size_t)n, (size_t)n, MPI_FLOAT,
                 i == t->rank ? 0.0 : 1e-2, NULL);
    mv_four_end(&f);
}

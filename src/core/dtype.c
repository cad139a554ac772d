/*
 * Derived datatypes made of one floating-point type: analysis, cache,
 * pack and unpack.
 *
 * A datatype is eligible for compression when its type map holds only
 * MPI_FLOAT or only MPI_DOUBLE elements, it is built with the combiners
 * NAMED, DUP, CONTIGUOUS, VECTOR, HVECTOR, INDEXED, HINDEXED, INDEXED_BLOCK,
 * HINDEXED_BLOCK, STRUCT, SUBARRAY and RESIZED, and no two elements of one
 * instance overlap. The analysis walks the constructors
 * (PMPI_Type_get_envelope / PMPI_Type_get_contents) and flattens one
 * instance into runs of consecutive elements (byte displacement, count) in
 * type-map order - the order of MPI_Pack - merging adjacent runs.
 *
 * The analysis is cached on the datatype as an attribute (keyval in the
 * process context); its delete callback drops the cache's reference when
 * the datatype is freed, so a new datatype at the same handle is analysed
 * afresh. Duplicates (MPI_Type_dup) share it. Operations in flight hold
 * their own reference, so the datatype may be freed under them.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct runs {
    zmpi_dtrun *v;
    size_t n, cap;
    size_t elems;
} runs;

typedef struct walker {
    MPI_Datatype basic; /* the one basic type seen so far (MPI_DATATYPE_NULL: none yet) */
    size_t es;
    int bad;            /* not eligible */
} walker;

static int walk(MPI_Datatype type, walker *w, runs *out);

/* Appends count elements at disp, merged with the last run when adjacent. */
static int push(runs *r, MPI_Aint disp, size_t count, size_t es)
{
    if (count == 0)
        return MPI_SUCCESS;
    r->elems += count;
    if (r->n && r->v[r->n - 1].disp + (MPI_Aint)(r->v[r->n - 1].count * es) == disp) {
        r->v[r->n - 1].count += count;
        return MPI_SUCCESS;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        zmpi_dtrun *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return MPI_ERR_NO_MEM;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n].disp = disp;
    r->v[r->n].count = count;
    r->n++;
    return MPI_SUCCESS;
}

/* Appends bl consecutive instances (extent ext) of the child whose runs are
 * `sub`, the first at byte offset off. */
static int push_block(runs *out, const runs *sub, MPI_Aint ext, MPI_Aint off, size_t bl, size_t es)
{
    int rc = MPI_SUCCESS;
    if (sub->n == 1 && sub->v[0].disp == 0 && (MPI_Aint)(sub->v[0].count * es) == ext)
        return push(out, off, bl * sub->v[0].count, es); /* dense child: one run */
    for (size_t i = 0; i < bl && rc == MPI_SUCCESS; i++)
        for (size_t j = 0; j < sub->n && rc == MPI_SUCCESS; j++)
            rc = push(out, off + (MPI_Aint)i * ext + sub->v[j].disp, sub->v[j].count, es);
    return rc;
}

static int named(MPI_Datatype type, walker *w, runs *out)
{
    zmpi_dtype dt;
    size_t es = zmpi_classify(type, &dt) ? zmpi_dtype_size(dt) : 0; /* float, double, Fortran reals */
    if (!es || (w->basic != MPI_DATATYPE_NULL && w->basic != type)) {
        w->bad = 1;
        return MPI_SUCCESS;
    }
    w->basic = type;
    w->es = es;
    return push(out, 0, 1, es);
}

/* The runs and extent of one child type. */
static int child(MPI_Datatype type, walker *w, runs *sub, MPI_Aint *ext)
{
    MPI_Aint lb;
    int rc = PMPI_Type_get_extent(type, &lb, ext);
    if (rc == MPI_SUCCESS)
        rc = walk(type, w, sub);
    return rc;
}

/* The rows of a subarray: blocks of subsizes[fastest] elements. */
static int subarray(const int *ints, MPI_Datatype old, walker *w, runs *out)
{
    int nd = ints[0], order = ints[3 * nd + 1], rc;
    const int *sizes = ints + 1, *subs = ints + 1 + nd, *starts = ints + 1 + 2 * nd;
    MPI_Aint ext, stride[64];
    int idx[64] = {0}, perm[64];
    runs sub = {0};
    if (nd < 1 || nd > 64) {
        w->bad = 1;
        return MPI_SUCCESS;
    }
    for (int k = 0; k < nd; k++)
        perm[k] = order == MPI_ORDER_C ? nd - 1 - k : k; /* perm[0]: the fastest dimension */
    MPI_Aint s = 1;
    for (int k = 0; k < nd; k++) {
        stride[perm[k]] = s;
        s *= sizes[perm[k]];
    }
    ZMPI_CHECK(child(old, w, &sub, &ext));
    for (int k = 0; k < nd; k++)
        if (subs[k] == 0 || w->bad)
            goto fn_exit;
    for (;;) {
        MPI_Aint off = 0;
        for (int k = 0; k < nd; k++)
            off += (MPI_Aint)(starts[k] + idx[k]) * stride[k];
        ZMPI_CHECK(push_block(out, &sub, ext, off * ext, (size_t)subs[perm[0]], w->es));
        int k = 1;
        while (k < nd && ++idx[perm[k]] == subs[perm[k]])
            idx[perm[k++]] = 0;
        if (k >= nd)
            break;
    }
fn_exit:
    free(sub.v);
    return rc;
fn_fail:
    goto fn_exit;
}

/* Block i of a combiner: byte offset (in units of the child's extent when
 * *scaled) and length. */
static void block_of(int comb, const int *ints, const MPI_Aint *aints, int i, MPI_Aint *off, size_t *bl,
                     int *scaled)
{
    int n = ints[0];
    *scaled = 1;
    switch (comb) {
    case MPI_COMBINER_VECTOR:
        *off = (MPI_Aint)i * ints[2], *bl = (size_t)ints[1];
        break;
    case MPI_COMBINER_HVECTOR:
        *off = (MPI_Aint)i * aints[0], *bl = (size_t)ints[1], *scaled = 0;
        break;
    case MPI_COMBINER_INDEXED:
        *off = ints[1 + n + i], *bl = (size_t)ints[1 + i];
        break;
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_STRUCT:
        *off = aints[i], *bl = (size_t)ints[1 + i], *scaled = 0;
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        *off = ints[2 + i], *bl = (size_t)ints[1];
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        *off = aints[i], *bl = (size_t)ints[1], *scaled = 0;
        break;
    default: /* DUP, RESIZED, CONTIGUOUS: one block at 0 */
        *off = 0, *bl = comb == MPI_COMBINER_CONTIGUOUS ? (size_t)ints[0] : 1;
    }
}

/* The blocks of a constructor whose contents are (ints, aints, types). */
static int place(int comb, const int *ints, const MPI_Aint *aints, const MPI_Datatype *types, walker *w,
                 runs *out)
{
    int nblocks = 1, rc = MPI_SUCCESS;
    if (comb == MPI_COMBINER_SUBARRAY)
        return subarray(ints, types[0], w, out);
    if (comb != MPI_COMBINER_DUP && comb != MPI_COMBINER_RESIZED && comb != MPI_COMBINER_CONTIGUOUS)
        nblocks = ints[0];
    runs sub = {0};
    MPI_Aint ext = 0;
    for (int i = 0; i < nblocks && !w->bad; i++) {
        MPI_Aint off;
        size_t bl;
        int scaled;
        if (i == 0 || comb == MPI_COMBINER_STRUCT) {
            sub.n = sub.elems = 0;
            ZMPI_CHECK(child(types[comb == MPI_COMBINER_STRUCT ? i : 0], w, &sub, &ext));
            if (w->bad)
                break;
        }
        block_of(comb, ints, aints, i, &off, &bl, &scaled);
        ZMPI_CHECK(push_block(out, &sub, ext, scaled ? off * ext : off, bl, w->es));
    }
fn_exit:
    free(sub.v);
    return rc;
fn_fail:
    goto fn_exit;
}

static int combiner_ok(int comb)
{
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
    case MPI_COMBINER_STRUCT:
    case MPI_COMBINER_SUBARRAY:
    case MPI_COMBINER_RESIZED:
        return 1;
    default:
        return 0;
    }
}

/* Frees the derived datatypes PMPI_Type_get_contents returned. */
static void free_types(MPI_Datatype *types, int nt)
{
    for (int i = 0; i < nt; i++) {
        int ni, na, ntt, comb;
        if (PMPI_Type_get_envelope(types[i], &ni, &na, &ntt, &comb) == MPI_SUCCESS &&
            comb != MPI_COMBINER_NAMED)
            PMPI_Type_free(&types[i]);
    }
}

/* Appends one instance of type, relative to its own origin, to out. */
static int walk(MPI_Datatype type, walker *w, runs *out)
{
    int ni, na, nt, comb, rc, got = 0;
    int *ints = NULL;
    MPI_Aint *aints = NULL;
    MPI_Datatype *types = NULL;
    ZMPI_CHECK(PMPI_Type_get_envelope(type, &ni, &na, &nt, &comb));
    if (comb == MPI_COMBINER_NAMED)
        return named(type, w, out);
    if (!combiner_ok(comb) || nt < 1) {
        w->bad = 1;
        return MPI_SUCCESS;
    }
    ints = malloc((size_t)(ni ? ni : 1) * sizeof *ints);
    aints = malloc((size_t)(na ? na : 1) * sizeof *aints);
    types = malloc((size_t)nt * sizeof *types);
    if (!ints || !aints || !types) {
        rc = MPI_ERR_NO_MEM;
        goto fn_fail;
    }
    ZMPI_CHECK(PMPI_Type_get_contents(type, ni, na, nt, ints, aints, types));
    got = 1;
    rc = place(comb, ints, aints, types, w, out);
fn_exit:
    if (got)
        free_types(types, nt);
    free(ints);
    free(aints);
    free(types);
    return rc;
fn_fail:
    goto fn_exit;
}

static int cmp_run(const void *a, const void *b)
{
    MPI_Aint x = ((const zmpi_dtrun *)a)->disp, y = ((const zmpi_dtrun *)b)->disp;
    return x < y ? -1 : x > y;
}

/* 1 if two runs of r overlap (r->n > 1). */
static int overlaps(const runs *r, size_t es, int *rc)
{
    zmpi_dtrun *s = malloc(r->n * sizeof *s);
    int bad = 0;
    *rc = MPI_SUCCESS;
    if (!s) {
        *rc = MPI_ERR_NO_MEM;
        return 1;
    }
    memcpy(s, r->v, r->n * sizeof *s);
    qsort(s, r->n, sizeof *s, cmp_run);
    for (size_t i = 1; i < r->n && !bad; i++)
        bad = s[i - 1].disp + (MPI_Aint)(s[i - 1].count * es) > s[i].disp;
    free(s);
    return bad;
}

/* A new analysis of type (refs 1); NULL when memory or MPI failed. */
static zmpi_dtinfo *analyse(MPI_Datatype type)
{
    walker w = {MPI_DATATYPE_NULL, 0, 0};
    runs r = {0};
    MPI_Aint lb;
    int rc;
    zmpi_dtinfo *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    atomic_init(&d->refs, 1);
    ZMPI_CHECK(walk(type, &w, &r));
    ZMPI_CHECK(PMPI_Type_get_extent(type, &lb, &d->extent));
    if (w.bad || w.basic == MPI_DATATYPE_NULL)
        goto fn_exit; /* not made of one floating-point type */
    d->packable = 1;
    d->eligible = !(r.n > 1 && overlaps(&r, w.es, &rc)) && !rc; /* (no memory for the check: "no" is right) */
    d->basic = w.basic;
    d->dt = w.es == 4 ? ZMPI_FLOAT : ZMPI_DOUBLE;
    d->es = w.es;
    d->n = r.elems;
    d->nruns = r.n;
    d->runs = r.v;
    r.v = NULL;
    d->dense = d->nruns == 0 ||
               (d->nruns == 1 && d->runs[0].disp == 0 && d->extent == (MPI_Aint)(d->n * d->es));
fn_exit:
    free(r.v);
    return d;
fn_fail:
    free(r.v);
    free(d);
    return NULL;
}

void zmpi_dtinfo_release(zmpi_dtinfo *d)
{
    if (d && atomic_fetch_sub(&d->refs, 1) == 1) {
        free(d->runs);
        free(d);
    }
}

static int dt_copy(MPI_Datatype old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)key;
    (void)extra;
    atomic_fetch_add(&((zmpi_dtinfo *)in)->refs, 1);
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int dt_delete(MPI_Datatype type, int key, void *val, void *extra)
{
    (void)type;
    (void)key;
    (void)extra;
    zmpi_dtinfo_release(val);
    return MPI_SUCCESS;
}

int zmpi_dtinfo_keyval(int *key)
{
    return PMPI_Type_create_keyval(dt_copy, dt_delete, key, NULL);
}

void zmpi_dtinfo_keyval_free(int *key)
{
    if (*key != MPI_KEYVAL_INVALID)
        PMPI_Type_free_keyval(key);
}

/* The cached analysis of type (a reference), NULL for a named type or
 * when it could not be made. */
static zmpi_dtinfo *cached(MPI_Datatype type);

void zmpi_dtinfo_get(MPI_Datatype type, zmpi_dtinfo **out)
{
    zmpi_dtinfo *d = cached(type);
    *out = NULL;
    if (d && d->eligible)
        *out = d;
    else
        zmpi_dtinfo_release(d);
}

void zmpi_dtinfo_get_send(MPI_Datatype type, zmpi_dtinfo **out)
{
    zmpi_dtinfo *d = cached(type);
    *out = NULL;
    if (d && d->packable)
        *out = d;
    else
        zmpi_dtinfo_release(d);
}

static zmpi_dtinfo *cached(MPI_Datatype type)
{
    int ni, na, nt, comb, flag = 0;
    void *val = NULL;
    zmpi_proc *p = zmpi_proc_get();
    if (!p || p->dtype_key == MPI_KEYVAL_INVALID || type == MPI_DATATYPE_NULL ||
        PMPI_Type_get_envelope(type, &ni, &na, &nt, &comb) != MPI_SUCCESS || comb == MPI_COMBINER_NAMED)
        return NULL;
    zmpi_dtinfo *d = NULL;
    if (PMPI_Type_get_attr(type, p->dtype_key, &val, &flag) == MPI_SUCCESS && flag) {
        d = val;
        atomic_fetch_add(&d->refs, 1);
    } else {
        d = analyse(type);
        if (!d)
            return NULL;
        atomic_fetch_add(&d->refs, 1); /* the attribute's reference */
        if (PMPI_Type_set_attr(type, p->dtype_key, d) != MPI_SUCCESS)
            atomic_fetch_sub(&d->refs, 1);
    }
    return d;
}

void zmpi_dtinfo_pack(const zmpi_dtinfo *d, const void *buf, size_t count, void *dst)
{
    unsigned char *o = dst;
    for (size_t i = 0; i < count; i++) {
        MPI_Aint base = (MPI_Aint)i * d->extent;
        for (size_t j = 0; j < d->nruns; j++) {
            size_t b = d->runs[j].count * d->es;
            memcpy(o, zmpi_at(buf, base + d->runs[j].disp), b);
            o += b;
        }
    }
}

void zmpi_dtinfo_unpack(const zmpi_dtinfo *d, const void *src, size_t elems, void *buf)
{
    const unsigned char *s = src;
    for (size_t i = 0; elems > 0; i++) {
        MPI_Aint base = (MPI_Aint)i * d->extent;
        for (size_t j = 0; j < d->nruns && elems > 0; j++) {
            size_t c = d->runs[j].count < elems ? d->runs[j].count : elems;
            memcpy(zmpi_at(buf, base + d->runs[j].disp), s, c * d->es);
            s += c * d->es;
            elems -= c;
        }
        if (d->nruns == 0)
            break;
    }
}

int ZMPI_Type_compressible(MPI_Datatype datatype, int *flag)
{
    zmpi_dtype dt;
    zmpi_dtinfo *d = NULL;
    if (!flag || datatype == MPI_DATATYPE_NULL)
        return MPI_ERR_ARG;
    *flag = zmpi_classify(datatype, &dt);
    if (!*flag) {
        zmpi_dtinfo_get(datatype, &d);
        *flag = d != NULL;
        zmpi_dtinfo_release(d);
    }
    return MPI_SUCCESS;
}

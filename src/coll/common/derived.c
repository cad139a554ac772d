/*
 * Derived datatypes in the data-movement collectives (Bcast, Scatter,
 * Gather, Allgather, Alltoall): a side of the call whose datatype is derived
 * and made of one floating-point type (a vector, subarray, indexed ... of
 * MPI_FLOAT or MPI_DOUBLE; src/core/dtype.c) is packed into a contiguous
 * buffer of its elements, the call runs on the basic type with the counts in
 * elements, and a received side is unpacked into the user's buffer. The
 * type signature is the same, so the ranks whose datatypes are basic run
 * the same call: whatever mix of derived and basic types the ranks use (a
 * root scattering a strided array to contiguous receivers), they all take
 * the same path. Reductions are not converted: MPI's predefined operations
 * apply to predefined datatypes only.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/dispatch.h"
#include "core/core.h"

/* One side of the call on this rank. */
typedef struct {
    zmpi_dtinfo *d;     /* the analysis of a derived type; NULL for a basic one */
    MPI_Datatype basic; /* the type the converted call uses */
    size_t n;           /* elements per instance */
    size_t inst;        /* instances this rank packs or unpacks (0: the side is not significant here) */
    void *tmp;          /* the packed elements */
} side;

static void side_free(side *s)
{
    zmpi_dtinfo_release(s->d);
    free(s->tmp);
}

/* Reads a significant side: 1 derived and convertible, 0 basic (or not a
 * type zmpi compresses: nothing to convert), -1 derived of something else. */
static int side_of(MPI_Datatype type, int sending, size_t inst, side *s)
{
    zmpi_dtype dt;
    memset(s, 0, sizeof *s);
    s->basic = type;
    s->n = 1;
    s->inst = inst;
    if (type == MPI_DATATYPE_NULL || zmpi_classify(type, &dt))
        return 0;
    if (sending)
        zmpi_dtinfo_get_send(type, &s->d);
    else
        zmpi_dtinfo_get(type, &s->d);
    if (!s->d)
        return -1;
    s->basic = s->d->basic;
    s->n = s->d->n;
    return 1;
}

/* The count of the converted call: count instances in elements. */
static int elems(int count, const side *s, int *out)
{
    if (count < 0 || (s->n && (size_t)count > (size_t)INT_MAX / s->n))
        return 0;
    *out = (int)((size_t)count * s->n);
    return 1;
}

/* Allocates the packed buffer of a derived side and, for a side that goes
 * out (or an in-place receive buffer), packs buf into it. */
static int stage(side *s, const void *buf, int pack)
{
    if (!s->d)
        return MPI_SUCCESS;
    size_t bytes = s->inst * s->n * s->d->es;
    int rc = zmpi_alloc(bytes, &s->tmp);
    if (rc == MPI_SUCCESS && pack && s->inst)
        zmpi_dtinfo_pack(s->d, buf, s->inst, s->tmp);
    return rc;
}

/* Rank-dependent facts of the block calls: the instances of each side this
 * rank holds, and whether the receive buffer is also the input (in place). */
static void block_sides(const zmpi_coll_args *a, int rank, int size, size_t *sinst, size_t *rinst, int *inplace)
{
    size_t sc = a->sendcount > 0 ? (size_t)a->sendcount : 0, rc = a->recvcount > 0 ? (size_t)a->recvcount : 0;
    int root = rank == a->root;
    *inplace = 0;
    switch (a->call) {
    case ZMPI_CC_SCATTER:
        *sinst = root ? sc * (size_t)size : 0;
        *rinst = root && a->recvbuf == MPI_IN_PLACE ? 0 : rc;
        break;
    case ZMPI_CC_GATHER:
        *inplace = root && a->sendbuf == MPI_IN_PLACE;
        *sinst = *inplace ? 0 : sc;
        *rinst = root ? rc * (size_t)size : 0;
        break;
    default: /* Allgather, Alltoall */
        *inplace = a->sendbuf == MPI_IN_PLACE;
        *sinst = *inplace ? 0 : a->call == ZMPI_CC_ALLTOALL ? sc * (size_t)size : sc;
        *rinst = rc * (size_t)size;
        break;
    }
}

static int run_blocks(const zmpi_coll_args *a, side *s, side *r, int inplace)
{
    zmpi_coll_args b = *a;
    if ((s->inst && !elems(a->sendcount, s, &b.sendcount)) || (r->inst && !elems(a->recvcount, r, &b.recvcount)))
        return zmpi_raise(a->comm, MPI_ERR_COUNT);
    int rc = stage(s, a->sendbuf, 1);
    if (rc == MPI_SUCCESS)
        rc = stage(r, a->recvbuf, inplace);
    if (rc != MPI_SUCCESS)
        return zmpi_raise(a->comm, rc);
    if (s->inst) {
        b.sendbuf = s->d ? s->tmp : a->sendbuf;
        b.sendtype = s->basic;
    }
    if (r->inst) {
        b.recvbuf = r->d ? r->tmp : a->recvbuf;
        b.recvtype = r->basic;
    }
    rc = zmpi_coll_run(&b);
    if (rc == MPI_SUCCESS && r->d && r->inst)
        zmpi_dtinfo_unpack(r->d, r->tmp, r->inst * r->n, a->recvbuf);
    return rc;
}

static int run_bcast(const zmpi_coll_args *a, side *s, int root)
{
    zmpi_coll_args b = *a;
    if (!elems(a->count, s, &b.count))
        return zmpi_raise(a->comm, MPI_ERR_COUNT);
    int rc = stage(s, a->recvbuf, root);
    if (rc != MPI_SUCCESS)
        return zmpi_raise(a->comm, rc);
    b.recvbuf = s->tmp;
    b.datatype = s->basic;
    rc = zmpi_coll_run(&b);
    if (rc == MPI_SUCCESS && !root)
        zmpi_dtinfo_unpack(s->d, s->tmp, s->inst * s->n, a->recvbuf);
    return rc;
}

/* 1 if comm compresses at all (a bound or a lossless codec): else the
 * conversion would only cost copies. */
static int compresses(MPI_Comm comm)
{
    zmpi_comm_state *st = comm == MPI_COMM_NULL ? NULL : zmpi_state(comm);
    return st && ZMPI_Config_compresses(&st->cfg);
}

/* 1 if type is MPI_DATATYPE_NULL or one zmpi takes as it is. */
static int plain_type(MPI_Datatype type)
{
    zmpi_dtype dt;
    return type == MPI_DATATYPE_NULL || zmpi_classify(type, &dt);
}

int zmpi_coll_derived(const zmpi_coll_args *a, int *rc)
{
    int rank = 0, size = 0, inter = 0, ds, dr = 0, inplace = 0;
    size_t sinst = 0, rinst = 0;
    side s = {0}, r = {0};
    /* the common case first, without a call into MPI: no derived type */
    if (a->call == ZMPI_CC_BCAST ? plain_type(a->datatype) : plain_type(a->sendtype) && plain_type(a->recvtype))
        return 0;
    if ((a->call != ZMPI_CC_BCAST && a->call != ZMPI_CC_SCATTER && a->call != ZMPI_CC_GATHER &&
         a->call != ZMPI_CC_ALLGATHER && a->call != ZMPI_CC_ALLTOALL) ||
        a->comm == MPI_COMM_NULL || PMPI_Comm_test_inter(a->comm, &inter) != MPI_SUCCESS || inter ||
        !compresses(a->comm) || PMPI_Comm_rank(a->comm, &rank) != MPI_SUCCESS ||
        PMPI_Comm_size(a->comm, &size) != MPI_SUCCESS)
        return 0;
    if (a->call == ZMPI_CC_BCAST) {
        if (a->count <= 0 || side_of(a->datatype, rank == a->root, (size_t)a->count, &s) != 1)
            return (side_free(&s), 0);
        *rc = run_bcast(a, &s, rank == a->root);
        side_free(&s);
        return 1;
    }
    block_sides(a, rank, size, &sinst, &rinst, &inplace);
    ds = sinst ? side_of(a->sendtype, 1, sinst, &s) : side_of(MPI_DATATYPE_NULL, 1, 0, &s);
    dr = rinst ? side_of(a->recvtype, 0, rinst, &r) : side_of(MPI_DATATYPE_NULL, 0, 0, &r);
    if (ds < 0 || dr < 0 || (ds == 0 && dr == 0)) { /* nothing to convert, or a type zmpi does not take */
        side_free(&s), side_free(&r);
        return 0;
    }
    *rc = run_blocks(a, &s, &r, inplace);
    side_free(&s), side_free(&r);
    return 1;
}

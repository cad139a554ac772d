/* The one path of every compressed collective call (see dispatch.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/allgather/allgather.h"
#include "coll/allreduce/allreduce.h"
#include "coll/bcast/bcast.h"
#include "coll/common/movement.h"
#include "coll/dispatch.h"
#include "coll/gather/gather.h"
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/scatter/scatter.h"

/* The collective of each call. */
static const ZMPI_Coll coll_of[ZMPI_CC_COUNT] = {
    [ZMPI_CC_BCAST] = ZMPI_COLL_BCAST,
    [ZMPI_CC_SCATTER] = ZMPI_COLL_SCATTER,
    [ZMPI_CC_SCATTERV] = ZMPI_COLL_SCATTER,
    [ZMPI_CC_GATHER] = ZMPI_COLL_GATHER,
    [ZMPI_CC_GATHERV] = ZMPI_COLL_GATHER,
    [ZMPI_CC_ALLGATHER] = ZMPI_COLL_ALLGATHER,
    [ZMPI_CC_ALLGATHERV] = ZMPI_COLL_ALLGATHER,
    [ZMPI_CC_ALLTOALL] = ZMPI_COLL_ALLTOALL,
    [ZMPI_CC_ALLTOALLV] = ZMPI_COLL_ALLTOALL,
    [ZMPI_CC_REDUCE_SCATTER] = ZMPI_COLL_REDUCE_SCATTER,
    [ZMPI_CC_REDUCE_SCATTER_BLOCK] = ZMPI_COLL_REDUCE_SCATTER,
    [ZMPI_CC_ALLREDUCE] = ZMPI_COLL_ALLREDUCE,
    [ZMPI_CC_REDUCE] = ZMPI_COLL_REDUCE,
};

static const zmpi_coll_ops *const rows[ZMPI_COLL_COUNT] = {
    [ZMPI_COLL_BCAST] = &zmpi_bcast_ops,
    [ZMPI_COLL_SCATTER] = &zmpi_scatter_ops,
    [ZMPI_COLL_GATHER] = &zmpi_gather_ops,
    [ZMPI_COLL_ALLGATHER] = &zmpi_allgather_ops,
    [ZMPI_COLL_ALLTOALL] = &zmpi_alltoall_ops,
    [ZMPI_COLL_REDUCE_SCATTER] = &zmpi_reduce_scatter_ops,
    [ZMPI_COLL_ALLREDUCE] = &zmpi_allreduce_ops,
    [ZMPI_COLL_REDUCE] = &zmpi_reduce_ops,
};

size_t zmpi_coll_elem_size(MPI_Datatype type)
{
    zmpi_dtype dt;
    return zmpi_classify(type, &dt) ? zmpi_dtype_size(dt) : 0;
}

int zmpi_coll_fits(int count, int size)
{
    return count >= 0 && size >= 1 && (size_t)count * (size_t)(size - 1) <= (size_t)INT_MAX;
}

/* The side of a Scatter(v) or Gather(v) significant on this rank. */
static int rooted_send_side(const zmpi_coll_args *a, int rank)
{
    return (a->call == ZMPI_CC_SCATTER || a->call == ZMPI_CC_SCATTERV) == (rank == a->root);
}

int zmpi_coll_shape_rooted(const zmpi_coll_args *a, zmpi_coll_known *k)
{
    int rank = -1, size = 0, v = a->call == ZMPI_CC_SCATTERV || a->call == ZMPI_CC_GATHERV;
    PMPI_Comm_rank(a->comm, &rank);
    int send = rooted_send_side(a, rank), count = send ? a->sendcount : a->recvcount;
    k->type = send ? a->sendtype : a->recvtype;
    k->bytes = SIZE_MAX;
    if (v)
        return ZMPI_CALL_ON;
    PMPI_Comm_size(a->comm, &size);
    if (!zmpi_coll_fits(count, size))
        return ZMPI_CALL_PLAIN; /* the blocks' int displacements must fit */
    k->bytes = (size_t)count * zmpi_coll_elem_size(k->type);
    return ZMPI_CALL_ON;
}

int zmpi_coll_invalid_rooted(const zmpi_call *c, const zmpi_coll_args *a)
{
    int send = rooted_send_side(a, c->rank);
    if (zmpi_coll_bad_root(c, a))
        return 1;
    if (a->call != ZMPI_CC_SCATTERV && a->call != ZMPI_CC_GATHERV)
        return 0;
    if (c->rank == a->root)
        return zmpi_coll_any_negative(send ? a->sendcounts : a->recvcounts, c->size);
    return (send ? a->sendcount : a->recvcount) < 0;
}

int zmpi_coll_bad_root(const zmpi_call *c, const zmpi_coll_args *a)
{
    return a->root < 0 || a->root >= c->size;
}

int zmpi_coll_any_negative(const int *counts, int n)
{
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return 1;
    return 0;
}

int zmpi_coll_layout(const zmpi_call *c, int count, zmpi_coll_job *j, const int **counts, const int **displs)
{
    int k = 0;
    while (k < 4 && j->owned[k])
        k += 2; /* the first free pair of owned arrays (Alltoall lays out two) */
    int rc = zmpi_dm_equal_layout(c->size, count, &j->owned[k], &j->owned[k + 1]);
    *counts = j->owned[k];
    *displs = j->owned[k + 1];
    return rc;
}

int zmpi_coll_multinode(const zmpi_call *c)
{
    return zmpi_topo_multinode(atomic_load(&c->st->topo), c->size);
}

int zmpi_coll_bound_once(zmpi_call *c, const zmpi_coll_job *j)
{
    (void)j;
    return zmpi_call_bound(c, 1, NULL, 0);
}

/* Each collective's default compressed algorithm and its rival (ZMPI_WAY_RIVAL,
 * measured beside it with the model on): the other compressed algorithm that
 * can win on the same arguments. Bcast: the pipelined tree (log2 N x the
 * compressed bytes through the root, all stages overlapped) against scatter +
 * allgather (2 x, in phases); Scatter / Gather: binomial (log2 N bundles)
 * against linear (N - 1 messages); Allgather: ring against recursive doubling;
 * Allreduce and Reduce_scatter: ring against recursive halving / doubling.
 * Either of a pair is the other's rival. */
static const int rivals[ZMPI_COLL_COUNT][2] = {
    [ZMPI_COLL_BCAST] = {ZMPI_BCAST_SCATTER_ALLGATHER, ZMPI_BCAST_PIPELINED},
    [ZMPI_COLL_SCATTER] = {ZMPI_SCATTER_LINEAR, ZMPI_SCATTER_BINOMIAL},
    [ZMPI_COLL_GATHER] = {ZMPI_GATHER_LINEAR, ZMPI_GATHER_BINOMIAL},
    [ZMPI_COLL_ALLGATHER] = {ZMPI_ALLGATHER_RDB, ZMPI_ALLGATHER_RING},
    [ZMPI_COLL_ALLREDUCE] = {ZMPI_ALLREDUCE_RHD, ZMPI_ALLREDUCE_RING},
    [ZMPI_COLL_REDUCE_SCATTER] = {ZMPI_REDUCE_SCATTER_RING, ZMPI_REDUCE_SCATTER_RHD},
};

/* The rival of algorithm `algo` of coll, or 0. */
static int rival_of(ZMPI_Coll coll, int algo)
{
    const int *r = rivals[coll];
    return algo == r[0] ? r[1] : algo == r[1] ? r[0] : 0;
}

/* Algorithm al of c->coll on the arguments j. */
static int run_algo(zmpi_call *c, const zmpi_algo *al, const zmpi_coll_job *j)
{
    const zmpi_algo_fn f = al->fn;
    switch (c->coll) {
    case ZMPI_COLL_BCAST: return f.bcast(c, j->recvbuf, j->count, j->root);
    case ZMPI_COLL_SCATTER:
        return f.scatterv(c, j->sendbuf, j->sendcounts, j->sdispls, j->recvbuf, j->recvcount, j->root);
    case ZMPI_COLL_GATHER:
        return f.gatherv(c, j->sendbuf, j->sendcount, j->recvbuf, j->recvcounts, j->rdispls, j->root);
    case ZMPI_COLL_ALLGATHER: return f.allgatherv(c, j->sendbuf, j->recvbuf, j->recvcounts, j->rdispls);
    case ZMPI_COLL_ALLTOALL:
        return f.alltoallv(c, j->sendbuf, j->sendcounts, j->sdispls, j->recvbuf, j->recvcounts, j->rdispls);
    case ZMPI_COLL_REDUCE_SCATTER: return f.reduce_scatter(c, j->sendbuf, j->recvbuf, j->recvcounts, j->op);
    case ZMPI_COLL_ALLREDUCE: return f.allreduce(c, j->sendbuf, j->recvbuf, j->count, j->op);
    case ZMPI_COLL_REDUCE: return f.reduce(c, j->sendbuf, j->recvbuf, j->count, j->op, j->root);
    case ZMPI_COLL_COUNT: break;
    }
    return MPI_ERR_INTERN;
}

/* The compressed path of a call zmpi_call_begin let through: algorithm,
 * arguments in elements, bound, algorithm run. */
static int compressed(zmpi_call *c, const zmpi_coll_ops *o, const zmpi_coll_args *a)
{
    int rc = MPI_SUCCESS, want = 0;
    zmpi_coll_job j;
    memset(&j, 0, sizeof j);
    if (o->choose && c->st->cfg.algorithm[c->coll] == ZMPI_ALGO_DEFAULT)
        want = o->choose(c, a);
    c->algo = zmpi_coll_algo_pick(c, want);
    if (c->rival && rival_of(c->coll, c->algo)) /* the measurements prefer it, or measure it */
        c->algo = rival_of(c->coll, c->algo);
    const zmpi_algo *al = zmpi_coll_algo_get(c->coll, c->algo);
    if (!al) {
        rc = MPI_ERR_INTERN;
        goto fn_fail;
    }
    ZMPI_CHECK(o->prepare(c, a, &j));
    if (o->bound && !al->own_bound)
        ZMPI_CHECK(o->bound(c, &j));
    ZMPI_CHECK(run_algo(c, al, &j));
    rc = j.late_err;
fn_exit:
    zmpi_scratch_put(c, j.scratch);
    for (size_t k = 0; k < sizeof j.owned / sizeof j.owned[0]; k++)
        free(j.owned[k]);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_coll_run(const zmpi_coll_args *a)
{
    ZMPI_Coll coll = (unsigned)a->call < ZMPI_CC_COUNT ? coll_of[a->call] : ZMPI_COLL_COUNT;
    const zmpi_coll_ops *o = coll < ZMPI_COLL_COUNT ? rows[coll] : NULL;
    zmpi_coll_known k = {MPI_DATATYPE_NULL, 0, MPI_SUCCESS};
    int rc = MPI_SUCCESS, on;
    zmpi_call c;

    if (!o) {
        rc = zmpi_err(ZMPI_EK_ARG, "unknown collective call %d", (int)a->call);
        goto fn_fail;
    }
    if (zmpi_coll_derived(a, &rc))
        return rc;
    on = o->shape(a, &k);
    if (on == ZMPI_CALL_ERR) {
        rc = k.err;
        goto fn_fail;
    }
    if (on == ZMPI_CALL_PLAIN)
        goto fn_plain;
    on = zmpi_call_begin(&c, a->comm, coll, k.type, o->reduces ? a->op : MPI_OP_NULL, k.bytes,
                         rivals[coll][0] > 0);
    if (on == ZMPI_CALL_ERR) {
        rc = c.err; /* unusable or disagreeing settings */
        goto fn_fail;
    }
    if (on == ZMPI_CALL_ON && o->invalid && o->invalid(&c, a)) {
        zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
        on = ZMPI_CALL_PLAIN;
    }
    if (on == ZMPI_CALL_PLAIN)
        goto fn_plain;
    rc = compressed(&c, o, a);
    zmpi_call_end(&c);
    if (rc)
        goto fn_fail;
fn_exit:
    return rc;
fn_fail:
    rc = zmpi_raise(a->comm, rc); /* zmpi's errors, and those of the private duplicate */
    goto fn_exit;
fn_plain:
    rc = o->plain(a);
    zmpi_call_plain_done(a->comm); /* completes a measurement of the plain call */
    goto fn_exit;
}

int zmpi_coll_run_blocks(zmpi_coll_call call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    zmpi_coll_args a = {.call = call, .sendbuf = sendbuf, .sendcount = sendcount, .sendtype = sendtype,
                        .recvbuf = recvbuf, .recvcount = recvcount, .recvtype = recvtype, .root = root,
                        .comm = comm};
    return zmpi_coll_run(&a);
}

int zmpi_coll_shape_count(const zmpi_coll_args *a, zmpi_coll_known *k)
{
    if (a->comm == MPI_COMM_NULL || a->count < 0)
        return ZMPI_CALL_PLAIN;
    k->type = a->datatype;
    k->bytes = (size_t)a->count * zmpi_coll_elem_size(a->datatype);
    return ZMPI_CALL_ON;
}

int zmpi_coll_prepare_count(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j)
{
    (void)c;
    *j = (zmpi_coll_job){.sendbuf = a->sendbuf, .recvbuf = a->recvbuf,
                         .count = (size_t)(a->count > 0 ? a->count : 0), .op = a->op, .root = a->root};
    return MPI_SUCCESS;
}

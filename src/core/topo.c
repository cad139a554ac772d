/*
 * The node layout of a communicator: which of its ranks share a node (and
 * so shared memory, and one network card).
 *
 * Learned once per communicator and kept in its state:
 *
 *   ZMPI_NODE_RANKS=k   emulated: rank r of comm is on node
 *                       (its rank in MPI_COMM_WORLD) / k - local, no
 *                       communication; k = 1 makes every rank a node
 *   auto (the default)  the MPI's own: MPI_Comm_split_type(comm,
 *                       MPI_COMM_TYPE_SHARED) groups the ranks that share
 *                       memory; each group's lowest rank of comm, gathered
 *                       from every rank, names its node - collective over
 *                       comm, so done only where every rank is in the same
 *                       call (the first collective that compresses, or
 *                       ZMPI_Comm_prepare / ZMPI_Comm_nodes)
 *   derived             once MPI_COMM_WORLD's layout is known (learned as
 *                       above on MPI_COMM_WORLD or a duplicate of it: the
 *                       transparent mode does it in MPI_Init), every other
 *                       communicator's follows locally from its ranks' ranks
 *                       in MPI_COMM_WORLD - also for point-to-point calls,
 *                       which cannot learn collectively. A collective
 *                       learning uses it only where every rank of comm can
 *                       (one small allreduce decides), so all ranks agree.
 *
 * From one key per rank (ranks with equal keys share a node), nodes are
 * numbered in the order of their lowest rank:
 *
 *   ranks     0 1 2 3 4 5 6      keys  9 9 4 4 9 7 7
 *   node_of   0 0 1 1 0 2 2      leader 0 2 5    contiguous: no (rank 4)
 *
 * A layout is never freed while its communicator lives (a point-to-point
 * call on another thread may hold it): a replaced one is kept until then.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct topo_box {
    zmpi_topo t;
    struct topo_box *retired; /* layouts this one replaced */
    int split;                /* the communicators below were made (zmpi_topo_comms) */
    MPI_Comm node, cross;
} topo_box;

typedef struct {
    int key, rank;
} key_rank;

static int by_key_rank(const void *a, const void *b)
{
    const key_rank *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Fills t (size ranks, this one `me`) from one node key per rank. */
static int layout(topo_box *b, int size, int me, const int *key)
{
    zmpi_topo *t = &b->t;
    key_rank *kr = malloc(sizeof *kr * (size_t)size);
    int *lead = malloc(sizeof *lead * (size_t)size), *count = NULL;
    t->node_of = malloc(sizeof *t->node_of * (size_t)size);
    if (!kr || !lead || !t->node_of) {
        free(kr);
        free(lead);
        return MPI_ERR_NO_MEM;
    }
    for (int r = 0; r < size; r++)
        kr[r] = (key_rank){key[r], r};
    qsort(kr, (size_t)size, sizeof *kr, by_key_rank);
    for (int i = 0, first = 0; i < size; i++) {
        if (i > 0 && kr[i].key != kr[i - 1].key)
            first = i;
        lead[kr[i].rank] = kr[first].rank; /* the lowest rank of its node */
    }
    free(kr);
    t->size = size;
    t->nnodes = 0;
    for (int r = 0; r < size; r++) /* lead[r] <= r: numbered before r needs it */
        t->node_of[r] = lead[r] == r ? t->nnodes++ : t->node_of[lead[r]];
    free(lead);
    t->leader = malloc(sizeof *t->leader * (size_t)t->nnodes);
    count = calloc((size_t)t->nnodes, sizeof *count);
    if (!t->leader || !count) {
        free(count);
        return MPI_ERR_NO_MEM;
    }
    t->contiguous = 1;
    for (int r = 0; r < size; r++) {
        int n = t->node_of[r];
        if (count[n]++ == 0)
            t->leader[n] = r;
        if (r > 0 && n < t->node_of[r - 1])
            t->contiguous = 0;
        if (r == me)
            t->local_rank = count[n] - 1;
    }
    t->node = t->node_of[me];
    t->local_size = count[t->node];
    t->max_local = 0;
    t->min_local = size;
    for (int n = 0; n < t->nnodes; n++) {
        t->max_local = count[n] > t->max_local ? count[n] : t->max_local;
        t->min_local = count[n] < t->min_local ? count[n] : t->min_local;
    }
    free(count);
    return MPI_SUCCESS;
}

static void box_free(topo_box *b)
{
    while (b) {
        topo_box *next = b->retired;
        if (b->node != MPI_COMM_NULL)
            PMPI_Comm_free(&b->node);
        if (b->cross != MPI_COMM_NULL)
            PMPI_Comm_free(&b->cross);
        free(b->t.node_of);
        free(b->t.leader);
        free(b);
        b = next;
    }
}

/* Each rank of comm's rank in MPI_COMM_WORLD (MPI_UNDEFINED for a rank that
 * is not in it, after MPI_Comm_spawn). */
static int world_ranks(MPI_Comm comm, int size, int *out)
{
    MPI_Group g = MPI_GROUP_NULL, w = MPI_GROUP_NULL;
    int *ranks = malloc(sizeof *ranks * (size_t)size), rc;
    if (!ranks)
        return MPI_ERR_NO_MEM;
    for (int r = 0; r < size; r++)
        ranks[r] = r;
    rc = PMPI_Comm_group(comm, &g);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_group(MPI_COMM_WORLD, &w);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Group_translate_ranks(g, size, ranks, w, out);
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (w != MPI_GROUP_NULL)
        PMPI_Group_free(&w);
    free(ranks);
    return rc;
}

/* Emulated nodes: each rank's rank in MPI_COMM_WORLD / k (a rank that is
 * not in MPI_COMM_WORLD is a node of its own). */
static int emulated_keys(MPI_Comm comm, int size, int k, int *key)
{
    int rc = world_ranks(comm, size, key);
    for (int r = 0; rc == MPI_SUCCESS && r < size; r++)
        key[r] = key[r] == MPI_UNDEFINED ? -1 - r : key[r] / k;
    return rc;
}

/* The keys of comm's ranks from MPI_COMM_WORLD's layout: 1 if it is known
 * and every rank of comm is in MPI_COMM_WORLD (key filled), 0 if not, or
 * -1 on an MPI or memory failure (*rc). Local. */
static int derived_keys(MPI_Comm comm, int size, int *key, int *rc)
{
    zmpi_proc *p = zmpi_proc_get();
    const int *wk = p ? atomic_load(&p->world_key) : NULL;
    *rc = MPI_SUCCESS;
    if (!wk)
        return 0;
    *rc = world_ranks(comm, size, key);
    if (*rc != MPI_SUCCESS)
        return -1;
    for (int r = 0; r < size; r++) {
        if (key[r] == MPI_UNDEFINED)
            return 0;
        key[r] = wk[key[r]];
    }
    return 1;
}

/* Keeps the keys just learned collectively on comm as MPI_COMM_WORLD's if
 * comm has its ranks in its order (MPI_COMM_WORLD or a duplicate). */
static void keep_world(MPI_Comm comm, int size, const int *key)
{
    int same = MPI_UNEQUAL;
    zmpi_proc *p = zmpi_proc_get();
    if (!p || atomic_load(&p->world_key) || PMPI_Comm_compare(comm, MPI_COMM_WORLD, &same) != MPI_SUCCESS ||
        (same != MPI_IDENT && same != MPI_CONGRUENT))
        return;
    int *copy = malloc(sizeof *copy * (size_t)size), *none = NULL;
    if (!copy)
        return; /* not kept: the layouts are learned per communicator */
    memcpy(copy, key, sizeof *copy * (size_t)size);
    if (!atomic_compare_exchange_strong(&p->world_key, &none, copy))
        free(copy); /* another thread kept the same keys first */
}

/* The MPI's nodes: the lowest rank of comm among the ranks that share this
 * one's memory, gathered from every rank. Collective over comm. */
static int shared_keys(MPI_Comm comm, int me, int *key)
{
    MPI_Comm node = MPI_COMM_NULL;
    int mine = me;
    int rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc == MPI_SUCCESS && node != MPI_COMM_NULL) /* key 0: node keeps comm's order, its rank 0 is the lowest */
        rc = PMPI_Bcast(&mine, 1, MPI_INT, 0, node);
    if (node != MPI_COMM_NULL)
        PMPI_Comm_free(&node);
    /* every rank gathers, also after a failure (then with its own rank), so none is left waiting */
    int rc2 = PMPI_Allgather(&mine, 1, MPI_INT, key, 1, MPI_INT, comm);
    return rc != MPI_SUCCESS ? rc : rc2;
}

const zmpi_topo *zmpi_topo_get(zmpi_comm_state *s, MPI_Comm comm, int collective, int *rc)
{
    *rc = MPI_SUCCESS;
    zmpi_topo *t = atomic_load(&s->topo);
    if (t || s->inter || comm == MPI_COMM_NULL)
        return t;
    int k = s->cfg.node_ranks, size = s->size, me = 0;
    if (!k && !collective) { /* a point-to-point call: only from MPI_COMM_WORLD's layout, and cheaply */
        zmpi_proc *p = zmpi_proc_get();
        if (!p || !atomic_load(&p->world_key) || atomic_load(&s->topo_local_failed))
            return NULL;
    }
    topo_box *b = calloc(1, sizeof *b);
    if (b)
        b->node = b->cross = MPI_COMM_NULL;
    int *key = malloc(sizeof *key * (size_t)(size > 0 ? size : 1));
    if (!b || !key) {
        *rc = MPI_ERR_NO_MEM; /* (a few bytes per rank: the process is out of memory anyway) */
        free(b);
        free(key);
        return NULL;
    }
    *rc = PMPI_Comm_rank(comm, &me);
    if (*rc == MPI_SUCCESS && k) {
        *rc = emulated_keys(comm, size, k, key);
    } else if (*rc == MPI_SUCCESS) {
        int derived = derived_keys(comm, size, key, rc);
        if (collective) { /* derived only where every rank can derive: otherwise all learn together */
            int all = derived == 1; /* a rank that failed to derive learns with the others */
            *rc = PMPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
            if (*rc == MPI_SUCCESS && !all) {
                *rc = shared_keys(comm, me, key);
                if (*rc == MPI_SUCCESS)
                    keep_world(comm, size, key);
            }
        } else if (derived == 0) {
            atomic_store(&s->topo_local_failed, 1); /* a rank outside MPI_COMM_WORLD: never derived */
            free(b);
            free(key);
            return NULL;
        }
    }
    if (*rc == MPI_SUCCESS)
        *rc = layout(b, size, me, key);
    free(key);
    if (*rc != MPI_SUCCESS) {
        box_free(b);
        return NULL;
    }
    b->t.emulated = k;
    zmpi_topo *none = NULL;
    if (!atomic_compare_exchange_strong(&s->topo, &none, &b->t)) { /* another thread learned it first */
        box_free(b);
        return none;
    }
    return &b->t;
}

int zmpi_topo_comms(const zmpi_topo *t, MPI_Comm comm, MPI_Comm *node, MPI_Comm *cross)
{
    topo_box *b = (topo_box *)t; /* t is the first member */
    int rc = MPI_SUCCESS;
    if (!b->split) { /* collectives on a communicator are ordered: no other thread is here */
        int me = 0;
        rc = PMPI_Comm_rank(comm, &me);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Comm_split(comm, t->node, me, &b->node);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Comm_split(comm, t->local_rank < t->min_local ? t->local_rank : MPI_UNDEFINED, t->node,
                                 &b->cross);
        if (rc != MPI_SUCCESS) {
            if (b->node != MPI_COMM_NULL)
                PMPI_Comm_free(&b->node);
            if (b->cross != MPI_COMM_NULL)
                PMPI_Comm_free(&b->cross);
            return rc;
        }
        if (b->node != MPI_COMM_NULL)
            PMPI_Comm_set_errhandler(b->node, MPI_ERRORS_RETURN);
        if (b->cross != MPI_COMM_NULL)
            PMPI_Comm_set_errhandler(b->cross, MPI_ERRORS_RETURN);
        b->split = 1;
    }
    *node = b->node;
    *cross = b->cross;
    return rc;
}

void zmpi_topo_drop(zmpi_comm_state *s)
{
    zmpi_topo *t = atomic_exchange(&s->topo, NULL);
    if (!t)
        return;
    topo_box *b = (topo_box *)t; /* t is the first member */
    b->retired = s->topo_retired;
    s->topo_retired = b;
}

void zmpi_topo_free(zmpi_comm_state *s)
{
    zmpi_topo_drop(s); /* the current layout joins the retired ones */
    box_free(s->topo_retired);
    s->topo_retired = NULL;
}

int ZMPI_Comm_nodes(MPI_Comm comm, int *nnodes, int *node, int *local_rank, int *local_size, int *node_of)
{
    if (comm == MPI_COMM_NULL)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "ZMPI_Comm_nodes on MPI_COMM_NULL"));
    zmpi_comm_state *s = zmpi_state(comm);
    if (!s)
        return zmpi_raise(comm, MPI_ERR_NO_MEM);
    if (s->inter)
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_ARG, "ZMPI_Comm_nodes: an intercommunicator has no node layout"));
    int rc = zmpi_state_error(s);
    if (rc)
        return zmpi_raise(comm, rc);
    /* every rank the same ZMPI_NODE_RANKS, and whether any must learn the layout (then all do, together) */
    int v[3] = {s->cfg.node_ranks, -s->cfg.node_ranks, atomic_load(&s->topo) == NULL}, g[3];
    rc = PMPI_Allreduce(v, g, 3, MPI_INT, MPI_MAX, comm);
    if (rc)
        return zmpi_raise(comm, rc);
    if (g[0] != -g[1])
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_MISMATCH, "ZMPI_Comm_nodes: the ranks have different "
                                                           "ZMPI_NODE_RANKS (%d to %d)", -g[1], g[0]));
    if (g[2] && !v[2])
        zmpi_topo_drop(s); /* another rank learns it: this one learns it again with it */
    s->topo_tried = 1;
    const zmpi_topo *t = zmpi_topo_get(s, comm, 1, &rc);
    if (!t)
        return zmpi_raise(comm, rc ? rc : MPI_ERR_INTERN);
    if (nnodes)
        *nnodes = t->nnodes;
    if (node)
        *node = t->node;
    if (local_rank)
        *local_rank = t->local_rank;
    if (local_size)
        *local_size = t->local_size;
    if (node_of)
        memcpy(node_of, t->node_of, sizeof *node_of * (size_t)t->size);
    return MPI_SUCCESS;
}

/* Steps shared by the node-aware algorithms (see node.h). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/node.h"

/* The even cut of count elements into k slices (the first count % k one
 * element longer) as int counts and displacements of the nl ranks of a
 * node (local ranks k and above: empty). */
static void slices(size_t count, int k, int nl, int *counts, int *displs)
{
    size_t base = count / (size_t)k, extra = count % (size_t)k, off = 0;
    for (int i = 0; i < nl; i++) {
        size_t n = i < k ? base + ((size_t)i < extra) : 0;
        counts[i] = (int)n;
        displs[i] = (int)off;
        off += n;
    }
}

int zmpi_node_begin(zmpi_call *c, const zmpi_topo *t, size_t count, int root, zmpi_node_job *j)
{
    int rc = MPI_SUCCESS;
    memset(j, 0, sizeof *j);
    j->t = t;
    j->node = j->cross = MPI_COMM_NULL;
    j->rs = MPI_REQUEST_NULL;
    j->K = t->min_local;
    j->lr = t->local_rank;
    for (int r = 0; r < root; r++) /* the node's ranks keep comm's order */
        j->root_local += t->node_of[r] == t->node_of[root];
    ZMPI_CHECK(zmpi_topo_comms(t, c->comm, &j->node, &j->cross));
    ZMPI_CHECK(zmpi_alloc((size_t)t->local_size * sizeof *j->counts, &j->counts));
    ZMPI_CHECK(zmpi_alloc((size_t)t->local_size * sizeof *j->displs, &j->displs));
    slices(count, j->K, t->local_size, j->counts, j->displs);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

void zmpi_node_end(zmpi_call *c, zmpi_node_job *j)
{
    PMPI_Wait(&j->rs, MPI_STATUS_IGNORE); /* no request outlives the call (an error path) */
    zmpi_scratch_put(c, j->mine);
    free(j->counts);
    free(j->displs);
    j->mine = NULL;
    j->counts = j->displs = NULL;
}

void zmpi_node_cross_call(const zmpi_call *c, const zmpi_node_job *j, zmpi_call *sub)
{
    *sub = *c;
    sub->tune = 0; /* the measurement is the whole call's (zmpi_call_end of c) */
    sub->rival = 0;
    if (j->cross != MPI_COMM_NULL) {
        sub->comm = j->cross;
        PMPI_Comm_rank(j->cross, &sub->rank);
        PMPI_Comm_size(j->cross, &sub->size);
    }
}

int zmpi_node_result_bound(zmpi_call *c, double lo, double hi, zmpi_call *sub)
{
    int rc = MPI_SUCCESS;
    if (c->mode != ZMPI_EB_REL || c->scope != ZMPI_SCOPE_RESULT)
        return rc;
    double mm[2] = {-lo, hi}, g[2];
    ZMPI_CHECK(PMPI_Allreduce(mm, g, 2, MPI_DOUBLE, MPI_MAX, c->comm));
    lo = -g[0];
    hi = g[1];
    double e = c->eb * (hi - lo);
    sub->mode = ZMPI_EB_ABS;
    sub->eb = !(hi > lo) ? 0 : isfinite(e) ? e : DBL_MAX;
fn_fail:
    return rc;
}

int zmpi_node_reduce_scatter(zmpi_call *c, zmpi_node_job *j, const void *in, MPI_Op op, zmpi_call *sub)
{
    int rc = MPI_SUCCESS;
    size_t n = (size_t)j->counts[j->lr];
    ZMPI_CHECK(zmpi_scratch_get(c, (n ? n : 1) * c->es, &j->mine));
    ZMPI_CHECK(PMPI_Ireduce_scatter(in, j->mine, j->counts, c->type, op, j->node, &j->rs));
    zmpi_node_cross_call(c, j, sub);
    if (c->mode == ZMPI_EB_REL && c->scope == ZMPI_SCOPE_RESULT) {
        /* the range of the part of the inputs that the ranks scan - each
         * the slice of its own input that it owns after this phase, 1/K of
         * it, while MPI reduces */
        double lo, hi;
        zmpi_value_range((const char *)in + (size_t)j->displs[j->lr] * c->es, n, c->dt, &lo, &hi, NULL);
        ZMPI_CHECK(zmpi_node_result_bound(c, lo, hi, sub));
    }
    ZMPI_CHECK(PMPI_Wait(&j->rs, MPI_STATUS_IGNORE));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_node_groups_begin(const zmpi_topo *t, zmpi_node_groups *g)
{
    int rc = MPI_SUCCESS, *seen = NULL;
    memset(g, 0, sizeof *g);
    g->M = t->nnodes;
    g->L = t->max_local;
    ZMPI_CHECK(zmpi_alloc((size_t)t->size * sizeof *g->member, &g->member));
    ZMPI_CHECK(zmpi_alloc((size_t)g->M * sizeof *g->gc, &g->gc));
    ZMPI_CHECK(zmpi_alloc((size_t)g->M * sizeof *g->gd, &g->gd));
    ZMPI_CHECK(zmpi_alloc((size_t)g->L * sizeof *g->gt, &g->gt));
    ZMPI_CHECK(zmpi_alloc((size_t)2 * (size_t)g->L * sizeof *g->req, &g->req));
    ZMPI_CHECK(zmpi_alloc((size_t)g->M * sizeof *seen, &seen));
    for (int k = 0; k < g->L; k++)
        g->gt[k] = MPI_DATATYPE_NULL;
    for (int k = 0; k < 2 * g->L; k++)
        g->req[k] = MPI_REQUEST_NULL;
    memset(seen, 0, (size_t)g->M * sizeof *seen);
    for (int r = 0; r < t->size; r++) { /* a node's ranks keep comm's order */
        int m = t->node_of[r];
        g->member[m * g->L + seen[m]++] = r;
    }
fn_fail:
    free(seen);
    return rc;
}

long long zmpi_node_group(zmpi_node_groups *g, int k, const int *counts, const int *displs)
{
    long long total = 0;
    for (int m = 0; m < g->M; m++) {
        int r = g->member[m * g->L + k];
        g->gc[m] = counts[r];
        g->gd[m] = displs[r];
        total += g->gc[m];
    }
    return total;
}

int zmpi_node_group_types(zmpi_node_groups *g, const int *counts, const int *displs, MPI_Datatype type)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < g->L; k++) {
        if (zmpi_node_group(g, k, counts, displs) > 0) { /* an empty group moves nothing: null on every rank */
            ZMPI_CHECK(PMPI_Type_indexed(g->M, g->gc, g->gd, type, &g->gt[k]));
            ZMPI_CHECK(PMPI_Type_commit(&g->gt[k]));
        }
    }
fn_fail:
    return rc;
}

void zmpi_node_groups_free(zmpi_node_groups *g)
{
    for (int k = 0; g->gt && k < g->L; k++)
        if (g->gt[k] != MPI_DATATYPE_NULL)
            PMPI_Type_free(&g->gt[k]);
    free(g->member);
    free(g->gc);
    free(g->gd);
    free(g->gt);
    free(g->req);
    memset(g, 0, sizeof *g);
}

int zmpi_node_coders(const zmpi_call *c, const zmpi_topo *t, int root, zmpi_node_coding *k)
{
    int rc = MPI_SUCCESS, n = 0, at = 0, rnode = t->node_of[root];
    memset(k, 0, sizeof *k);
    k->me = -1;
    for (int i = 0; i < t->size; i++)
        n += t->node_of[i] == rnode;
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *k->h, &k->h));
    ZMPI_CHECK(zmpi_alloc((size_t)t->size * sizeof *k->helper, &k->helper));
    k->L = n;
    k->h[at++] = root;
    for (int i = 0; i < t->size; i++)
        if (i != root && t->node_of[i] == rnode)
            k->h[at++] = i;
    for (int m = 0; m < n; m++)
        k->me = k->h[m] == c->rank ? m : k->me;
    at = 0;
    for (int i = 0; i < t->size; i++)
        k->helper[i] = t->node_of[i] == rnode ? -1 : ++at % n; /* the root, busiest, last */
fn_fail:
    return rc;
}

void zmpi_node_coding_free(zmpi_node_coding *k)
{
    free(k->h);
    free(k->helper);
    k->h = k->helper = NULL;
}

int zmpi_node_share_send(const zmpi_call *c, const zmpi_node_coding *k, const int *counts, int tag, int *buf,
                         zmpi_dm_reqs *r)
{
    int rc = MPI_SUCCESS;
    for (int m = 1; m < k->L; m++) {
        int n = 0;
        for (int i = 0; i < c->size; i++)
            if (k->helper[i] == m)
                buf[n++] = counts[i];
        if (n > 0)
            ZMPI_CHECK(zmpi_dm_isend(c, buf, (size_t)n * sizeof *buf, k->h[m], tag, r));
        buf += n;
    }
fn_fail:
    return rc;
}

int zmpi_node_share_recv(zmpi_call *c, const zmpi_node_coding *k, int root, int tag, zmpi_node_share *sh)
{
    int rc = MPI_SUCCESS, n = 0, at = 0;
    memset(sh, 0, sizeof *sh);
    for (int i = 0; i < c->size; i++)
        n += k->helper[i] == k->me;
    ZMPI_CHECK(zmpi_alloc((size_t)(n ? n : 1) * sizeof *sh->who, &sh->who));
    ZMPI_CHECK(zmpi_alloc((size_t)(n ? n : 1) * sizeof *sh->cnt, &sh->cnt));
    sh->n = n;
    for (int i = 0; i < c->size; i++)
        if (k->helper[i] == k->me)
            sh->who[at++] = i;
    if (n > 0)
        ZMPI_CHECK(zmpi_dm_recv(c, sh->cnt, (size_t)n * sizeof *sh->cnt, root, tag));
    for (at = 0; at < n; at++) {
        if (sh->cnt[at] < 0) {
            rc = MPI_ERR_COUNT;
            goto fn_fail;
        }
        sh->raw += (size_t)sh->cnt[at] * c->es;
        sh->zcap += zmpi_dm_cap(c, (size_t)sh->cnt[at]);
    }
fn_fail:
    return rc;
}

void zmpi_node_share_free(zmpi_node_share *sh)
{
    free(sh->who);
    free(sh->cnt);
    sh->who = sh->cnt = NULL;
}

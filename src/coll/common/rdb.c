/* Recursive-doubling allgather of compressed blocks: see rdb.h. */
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/common/rdb.h"

int zmpi_rdb_allgather(const zmpi_call *c, unsigned char *z, const size_t *off, int p, int v, const int *rank,
                       int tag, zmpi_rdb_arrived_fn arrived, void *arg)
{
    int rc = MPI_SUCCESS, prev_first = v, prev_n = 1;
    zmpi_dm_reqs r = {0};

    for (int dist = 1; dist < p; dist <<= 1) {
        int mine = v & ~(dist - 1), peer = mine ^ dist, w = rank ? rank[v ^ dist] : v ^ dist;
        ZMPI_CHECK(zmpi_dm_irecv(c, z + off[peer], off[peer + dist] - off[peer], w, tag, &r));
        ZMPI_CHECK(zmpi_dm_isend(c, z + off[mine], off[mine + dist] - off[mine], w, tag, &r));
        if (arrived) {
            ZMPI_CHECK(arrived(arg, prev_first, prev_n));
        }
        ZMPI_CHECK(zmpi_dm_waitall(&r));
        prev_first = peer;
        prev_n = dist;
    }
    if (arrived)
        rc = arrived(arg, prev_first, prev_n);
fn_exit:
    zmpi_dm_reqs_free(&r);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_rdb_layout(const zmpi_call *c, const void *mine, size_t len, int p, int v, const int *rank,
                    size_t *off, unsigned char **z)
{
    uint64_t mylen = len, *lens = NULL;
    int rc = MPI_SUCCESS;
    *z = NULL;
    ZMPI_CHECK(zmpi_alloc((size_t)c->size * sizeof *lens, &lens));
    ZMPI_CHECK(PMPI_Allgather(&mylen, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, c->comm));
    off[0] = 0;
    for (int i = 0; i < p; i++) {
        uint64_t l = lens[rank ? rank[i] : i];
        if (l > (uint64_t)(SIZE_MAX - off[i])) {
            rc = MPI_ERR_OTHER;
            goto fn_fail;
        }
        off[i + 1] = off[i] + (size_t)l;
    }
    ZMPI_CHECK(zmpi_scratch_get(c, off[p] ? off[p] : 1, z));
    if (v >= 0 && len > 0)
        memcpy(*z + off[v], mine, len);
fn_exit:
    free(lens);
    return rc;
fn_fail:
    goto fn_exit;
}

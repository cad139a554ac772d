/* Recursive-doubling allgather of compressed blocks: see rdb.h. */
#include "coll/common/rdb.h"
#include "coll/common/movement.h"

int zmpi_rdb_allgather(const zmpi_call *c, unsigned char *z, const size_t *off, int p, int v,
                       const int *rank, int tag, zmpi_rdb_arrived_fn arrived, void *arg)
{
    int rc = MPI_SUCCESS, prev_first = v, prev_n = 1;
    zmpi_dm_reqs r = {0};

    for (int dist = 1; dist < p; dist <<= 1) {
        int mine = v & ~(dist - 1), peer = mine ^ dist, w = v ^ dist;
        rc = zmpi_dm_irecv(c, z + off[peer], off[peer + dist] - off[peer], rank[w], tag, &r);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_isend(c, z + off[mine], off[mine + dist] - off[mine], rank[w], tag, &r);
        if (rc)
            goto fn_fail;
        if (arrived) {
            rc = arrived(arg, prev_first, prev_n);
            if (rc)
                goto fn_fail;
        }
        rc = zmpi_dm_waitall(&r);
        if (rc)
            goto fn_fail;
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

/*
 * Intercommunicators fall back to plain MPI: results byte-identical to the
 * MPI calls, counted as type fallbacks in the statistics. Needs 2 ranks or
 * more (one rank cannot form an intercommunicator: CMakeLists.txt does not
 * register it there, and run at one rank it fails).
 */
#include "mpitest.h"

#define N 50000

static void fill(float *x, int rank, int salt)
{
    mt_fill_field(x, N, MPI_FLOAT, (size_t)(rank * 13 + salt));
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_intercomm");
    if (t.size < 2) {
        MT_CHECK(&t, t.size >= 2, "an intercommunicator needs 2 ranks or more, not %d", t.size);
        return mt_finish(&t);
    }
    int color = t.rank < t.size / 2 ? 0 : 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, t.rank, &local);
    int remote_leader = color == 0 ? t.size / 2 : 0; /* rank in MPI_COMM_WORLD */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote_leader, 77, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    mt_config(inter, ZMPI_CODEC_FZL, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, 0);
    int lrank;
    MPI_Comm_rank(local, &lrank);

    float *x = malloc(sizeof(float) * N), *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    ZMPI_Stats s0, s1;
    ZMPI_Comm_get_stats(inter, &s0);

    /* Allreduce: each group receives the sum over the other group */
    fill(x, t.rank, 1);
    int r1 = ZMPI_Allreduce(x, a, N, MPI_FLOAT, MPI_SUM, inter);
    int r2 = MPI_Allreduce(x, b, N, MPI_FLOAT, MPI_SUM, inter);
    MT_CHECK(&t, r1 == MPI_SUCCESS && r2 == MPI_SUCCESS, "allreduce rc %d %d", r1, r2);
    MT_CHECK(&t, memcmp(a, b, sizeof(float) * N) == 0, "intercomm allreduce differs from MPI");

    /* Bcast from rank 0 of group 0 to group 1 */
    int root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    fill(a, 0, 2);
    if (color == 1)
        memset(a, 0, sizeof(float) * N);
    r1 = ZMPI_Bcast(a, N, MPI_FLOAT, root, inter);
    fill(b, 0, 2);
    MT_CHECK(&t, r1 == MPI_SUCCESS, "bcast rc %d", r1);
    MT_CHECK(&t, memcmp(a, b, sizeof(float) * N) == 0, "intercomm bcast differs from the root's data");

    /* Point-to-point across the groups: rank i of group 0 <-> rank i of group 1 */
    int rsize;
    MPI_Comm_remote_size(inter, &rsize);
    if (lrank < rsize) {
        fill(x, t.rank, 3);
        MPI_Status st;
        r1 = ZMPI_Sendrecv(x, N, MPI_FLOAT, lrank, 5, a, N, MPI_FLOAT, lrank, 5, inter, &st);
        int peer_world = color == 0 ? t.size / 2 + lrank : lrank;
        fill(b, peer_world, 3);
        int cnt = -1;
        MPI_Get_count(&st, MPI_FLOAT, &cnt);
        MT_CHECK(&t, r1 == MPI_SUCCESS && cnt == N, "sendrecv rc %d count %d", r1, cnt);
        MT_CHECK(&t, memcmp(a, b, sizeof(float) * N) == 0, "intercomm sendrecv not exact");
    }

    ZMPI_Comm_get_stats(inter, &s1);
    MT_CHECK(&t, s1.compressed == s0.compressed, "intercomm traffic was compressed (%llu calls)",
             s1.compressed - s0.compressed);
    MT_CHECK(&t, s1.fallback_type >= s0.fallback_type + 2, "fallbacks not counted (%llu)",
             s1.fallback_type - s0.fallback_type);

    free(x);
    free(a);
    free(b);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    return mt_finish(&t);
}

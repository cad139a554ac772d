/* A downstream program: compresses and restores an array through an
 * installed libzmpi (found with find_package or pkg-config). */
#include <stdio.h>
#include <stdlib.h>

#include <zmpi/codec.h>

int main(void)
{
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i * 0.5f;
    zmpi_ctx *c = zmpi_ctx_create();
    zmpi_ctx_set_bound(c, ZMPI_EB_ABS, 0.01);
    size_t cap = zmpi_max_compressed_size(c, N, ZMPI_FLOAT);
    void *buf = malloc(cap);
    ptrdiff_t len = zmpi_compress(c, x, N, ZMPI_FLOAT, buf, cap);
    ptrdiff_t got = len > 0 ? zmpi_decompress(c, buf, (size_t)len, y, sizeof y) : len;
    int bad = got != (ptrdiff_t)sizeof y;
    for (int i = 0; !bad && i < N; i++)
        bad = !(y[i] - x[i] <= 0.01f && x[i] - y[i] <= 0.01f);
    printf("consumer: zmpi %s, %td -> %td bytes, %s\n", zmpi_version(), (ptrdiff_t)sizeof x, len,
           bad ? "FAILED" : "ok");
    free(buf);
    zmpi_ctx_free(c);
    return bad;
}

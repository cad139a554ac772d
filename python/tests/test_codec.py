"""zmpi's codecs on numpy arrays: round trips within the bound on every
element, NaN/Inf bit-exact, hostile bytes and bad arguments raise."""
import os
import warnings

import numpy as np
import pytest

import zmpi

DATA = os.environ.get("ZMPI_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))


def field(dtype, shape):
    """A real ocean field (pop_t) tiled to shape, or a smooth synthetic one without the data."""
    n = int(np.prod(shape))
    path = os.path.join(DATA, "pop_t_384x320.f32")
    if os.path.exists(path):
        src = np.fromfile(path, dtype=np.float32)
        src = src[np.isfinite(src)]
        vals = np.resize(src, n)
    else:
        vals = np.sin(np.arange(n) * 1e-3) * 20 + 5
    return vals.astype(dtype).reshape(shape)


def within(orig, back, eb):
    """Every element within eb (NaN/Inf bit-exact)."""
    fin = np.isfinite(orig)
    assert np.array_equal(orig[~fin].view(f"u{orig.itemsize}"),
                          back[~fin].view(f"u{orig.itemsize}"))
    err = np.abs(orig[fin].astype(np.float64) - back[fin].astype(np.float64))
    assert err.size == 0 or err.max() <= eb, f"max error {err.max()} > bound {eb}"


SHAPES = [(0,), (1,), (7,), (1000,), (33, 47), (4, 5, 6, 7)]


@pytest.mark.parametrize("codec", ["fzl", "fzr"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bound", [("abs", 1e-2), ("abs", 1e-5), ("rel", 1e-3), ("rel", 1e-6)])
def test_bounded_round_trip(codec, dtype, shape, bound):
    a = field(dtype, shape)
    z = zmpi.compress(a, codec=codec, **{bound[0]: bound[1]})
    b = zmpi.decompress(z)
    assert b.shape == a.shape and b.dtype == a.dtype
    fin = a[np.isfinite(a)]
    eb = bound[1] if bound[0] == "abs" else bound[1] * (float(fin.max()) - float(fin.min()) if fin.size else 0)
    within(a, b, eb)
    i = zmpi.info(z)
    assert i["shape"] == a.shape and i["count"] == a.size and i["codec"] == codec


def test_fzr_uses_the_shape():
    """fzr predicts across rows of a 2-D array: rough along a row, smooth across rows."""
    x = np.arange(400)
    row = 5 * np.sin(0.9 * x) * np.cos(2.3 * (x % 13))
    a = (280 + row[None, :] + 0.01 * np.arange(300)[:, None]).astype(np.float32)
    two = zmpi.compress(a, codec="fzr", rel=1e-4)
    one = zmpi.compress(a.ravel(), codec="fzr", rel=1e-4)
    assert len(two) < len(one)
    within(a, zmpi.decompress(two), 1e-4 * float(a.max() - a.min()))


@pytest.mark.parametrize("codec", ["zstd", "xorlzc", "stored"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lossless_is_exact(codec, dtype):
    a = field(dtype, (64, 65))
    assert zmpi.decompress(zmpi.compress(a, codec=codec)).tobytes() == a.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_inf_bit_exact(dtype):
    a = field(dtype, (5000,))
    a[[3, 100, 4999]] = [np.nan, np.inf, -np.inf]
    a[200] = np.frombuffer(np.array([0x7FC00123 if dtype == np.float32 else 0x7FF8000000000123],
                                    dtype=f"u{np.dtype(dtype).itemsize}").tobytes(), dtype=dtype)[0]
    within(a, zmpi.decompress(zmpi.compress(a, rel=1e-4)), 1e-4 * (np.nanmax(a[np.isfinite(a)]) -
                                                                 np.nanmin(a[np.isfinite(a)])))


def test_out_and_bare_stream():
    a = field(np.float64, (10, 20))
    z = zmpi.compress(a, abs=1e-3)
    out = np.empty(200)
    assert zmpi.decompress(z, out=out) is out
    within(a.ravel(), out, 1e-3)
    bare = z[8 + 8 * a.ndim:]  # the C stream alone comes back one-dimensional
    assert zmpi.decompress(bare).shape == (200,)
    with pytest.raises(ValueError):
        zmpi.decompress(z, out=np.empty(200, np.float32))


def test_corrupt_and_truncated_raise():
    a = field(np.float32, (4096,))
    z = bytearray(zmpi.compress(a, rel=1e-3))
    for cut in (0, 3, 9, len(z) // 2, len(z) - 1):
        with pytest.raises(zmpi.CorruptStreamError):
            zmpi.decompress(bytes(z[:cut]))
    rng = np.random.default_rng(1)
    for _ in range(200):
        bad = bytearray(z)
        bad[int(rng.integers(len(bad)))] ^= 1 << int(rng.integers(8))
        try:
            b = zmpi.decompress(bytes(bad))
        except zmpi.Error:
            continue
        # a flip that decodes (a reserved bit) must still give the data within the bound
        within(a, b.ravel(), 1e-3 * (a.max() - a.min()))


def test_bad_arguments():
    a = field(np.float32, (100,))
    with pytest.raises(TypeError):
        zmpi.compress(a.astype(np.int32), rel=1e-3)
    with pytest.raises(TypeError):
        zmpi.compress(a, codec=3, rel=1e-3)
    with pytest.raises(ValueError):
        zmpi.compress(a, codec="nope", rel=1e-3)
    with pytest.raises(ValueError):
        zmpi.compress(a, codec="fzl")  # an error-bounded codec without a bound
    with pytest.raises(ValueError):
        zmpi.compress(a, codec="zstd", abs=1e-3)
    for eb in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            zmpi.compress(a, abs=eb)
    with pytest.raises(ValueError):
        zmpi.compress(a, abs=1e-3, rel=1e-3)
    with pytest.raises(ValueError):
        zmpi.compress(a, codec="xorlzc-inter")
    with pytest.raises(TypeError):
        zmpi.decompress(12)


def test_non_contiguous_warns():
    a = field(np.float64, (40, 50))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        z = zmpi.compress(a[:, ::2], abs=1e-4)
    assert any("C-contiguous" in str(x.message) for x in w)
    within(np.ascontiguousarray(a[:, ::2]), zmpi.decompress(z), 1e-4)


def test_codecs_and_evaluate():
    assert {"fzl", "zstd", "xorlzc", "trunc", "dp2sp"} <= set(zmpi.codecs())
    r = zmpi.evaluate(field(np.float32, (256, 256)), rel=1e-3, repeat=1)
    assert r["ratio"] > 1 and r["max_err_over_bound"] <= 1.0 and r["nonfinite_mismatch"] == 0


def test_numcodecs_and_zarr(tmp_path):
    numcodecs = pytest.importorskip("numcodecs")
    zarr = pytest.importorskip("zarr")
    codec = numcodecs.get_codec({"id": "zmpi", "codec": "fzl", "rel": 1e-3})
    assert type(codec).__name__ == "Zmpi" and codec.get_config()["rel"] == 1e-3
    a = field(np.float32, (300, 410))
    store = str(tmp_path / "f.zarr")
    z = zarr.open(store, mode="w", shape=a.shape, chunks=(128, 128), dtype=a.dtype, compressor=codec)
    z[:] = a
    back = zarr.open(store, mode="r")[:]
    # REL is relative to each chunk's own range: the whole array's range bounds it
    within(a, back, 1e-3 * (float(a.max()) - float(a.min())))
    assert zarr.open(store, mode="r").compressor.get_config() == codec.get_config()
    with pytest.raises(ValueError):
        numcodecs.get_codec({"id": "zmpi", "codec": "fzl"})


@pytest.mark.parametrize("codec,kw", [("fzl", {"abs": 1e-3}), ("zstd", {}), ("fzr", {"rel": 1e-4})])
@pytest.mark.parametrize("chunks", [(32, 32), (32, 48)])
def test_zarr_order_f(tmp_path, codec, kw, chunks):
    """Zarr with order="F" hands the codec F-ordered chunks and reads the decoded bytes in F order: the
    codec keeps the chunk's own memory order (before: it compressed a C-ordered copy, and a 96x64 field in
    32x32 chunks read back off by 37.7). Whole chunks (decoded into the array) and parts of chunks."""
    pytest.importorskip("numcodecs")
    zarr = pytest.importorskip("zarr")
    a = field(np.float32, (96, 64))
    store = str(tmp_path / "f.zarr")
    z = zarr.open(store, mode="w", shape=a.shape, chunks=chunks, dtype=a.dtype, order="F",
                  compressor=zmpi.numcodecs.Zmpi(codec=codec, **kw))
    z[:] = a
    r = zarr.open(store, mode="r")
    eb = kw.get("abs", kw.get("rel", 0) * (float(a.max()) - float(a.min())))
    for got, ref in ((r[:], a), (r[5:70, 3:50], a[5:70, 3:50]), (r[40:, 17], a[40:, 17])):
        if eb:
            within(ref, got, eb)
        else:
            assert got.tobytes() == ref.tobytes()


def test_numcodecs_keeps_memory_order():
    """encode/decode directly: an F-ordered chunk decodes into an F-ordered out, a C-ordered one into C."""
    codec = zmpi.numcodecs.Zmpi(codec="zstd")
    a = np.sin(np.arange(600) * 0.1).reshape(20, 30)
    for order in "CF":
        src = np.asarray(a, order=order)
        out = np.empty_like(src, order=order)
        codec.decode(codec.encode(src), out=out)
        assert np.array_equal(out, a)
        flat = codec.decode(codec.encode(src))  # without out: the chunk's memory, as numcodecs' codecs give it
        assert flat.tobytes() == src.tobytes(order="A")


def test_big_endian_by_value():
    """An array of the other byte order is compressed by value (zmpi.compress, evaluate), never its bytes
    reinterpreted; the numcodecs codec refuses it (Zarr would read the decoded bytes in that order)."""
    a = field(np.float64, (50, 40))
    be = a.astype(">f8")
    back = zmpi.decompress(zmpi.compress(be, abs=1e-4))
    assert back.dtype == np.float64 and back.dtype.isnative
    within(a, back, 1e-4)
    assert zmpi.decompress(zmpi.compress(a.astype(">f4"), codec="zstd")).tobytes() == a.astype(np.float32).tobytes()
    assert zmpi.evaluate(be, abs=1e-4, repeat=1)["max_err_over_bound"] <= 1.0
    with pytest.raises(ValueError):  # decompressing into an array of the other byte order: refused
        zmpi.decompress(zmpi.compress(a, abs=1e-4), out=np.empty(a.shape, ">f8"))
    pytest.importorskip("numcodecs")
    with pytest.raises(TypeError, match="byte order"):
        zmpi.numcodecs.Zmpi(codec="zstd").encode(be)

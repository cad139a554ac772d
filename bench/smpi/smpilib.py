"""What bench/smpi/run and bench/apps/run share: building zmpi's sources with
SimGrid's smpicc, the simulated platforms and running a program on them.

How SMPI charges time: the code between MPI calls is timed on the host and
injected as simulated computation (host speed 1 Gflop/s = one host second
per simulated second, --cfg=smpi/host-speed:1Gf); only the calling thread's
CPU time counts, and work inside MPI calls (e.g. the reduction inside
MPI_Allreduce) is free - so zmpi, which compresses and reduces in its own
code, is charged for work the baseline gets for free.

The collective algorithms of the plain MPI come from SMPI's selector
(smpi/coll-selector): SMPI models the choices of several MPI libraries
(SELECTORS), which differ by up to 4x on the same call; the fair baseline is
the fastest of them for each case (best_plain).
"""
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLATFORMS = ("gige64", "tengige64", "omnipath64")
# The selectors of SMPI that model a real MPI library's collective choices.
SELECTORS = ("mpich", "ompi", "mvapich2", "impi")
# SMPI injects a simulated cost into every MPI_Test (default 100 us, doubled
# on each consecutive call): a model of busy-wait loops, not of what a Test
# costs (well under 1 us). zmpi polls its transfers with MPI_Test between
# compression pieces, which the plain collectives never do, so the default
# would charge it tens of milliseconds per call for nothing. Charge 1 us.
SMPI_CFG = ["--cfg=smpi/test:1e-6", "--cfg=smpi/grow-injected-times:no"]
# The network each platform models, for zmpi's "does compression pay" model
# (ZMPI_NET_BW / ZMPI_NET_LAT): link bandwidth and end-to-end latency.
NET = {"gige64": ("1Gbit", "50us"), "tengige64": ("10Gbit", "10us"), "omnipath64": ("100Gbit", "1us")}
# zmpi's library sources (the MPI layer and the codecs), as the native build compiles them.
ZMPI_SOURCES = ["src/codec/*.c", "src/codec/*.h", "src/core/*", "src/coll/*.c", "src/coll/*.h", "src/coll/*/*.c",
                "src/coll/*/*.h", "src/p2p/*", "include/zmpi/*.h"]
# Same code as the native build: -O3 and the AVX2 kernels (chosen at run
# time), so the computation SMPI charges is what a real run would do.
CFLAGS = ["-std=c11", "-O3", "-ffp-contract=off", "-DZMPI_HAVE_AVX2=1", "-I" + os.path.join(ROOT, "include"),
          "-I" + os.path.join(ROOT, "src"), "-I" + os.path.join(ROOT, "src", "codec")]


def log(tag, msg):
    print(f"[{tag}] {msg}", file=sys.stderr, flush=True)


def expand(patterns):
    out = []
    for p in patterns:
        out += sorted(glob.glob(os.path.join(ROOT, p)))
    return out


def build(exe, patterns, extra_flags=(), libs=(), tag="smpi"):
    """Compiles the files of `patterns` (relative to the repository; .h files
    only count for staleness) with smpicc into exe, unless exe is newer than
    all of them. Returns exe."""
    srcs = expand(patterns)
    if os.path.exists(exe) and os.path.getmtime(exe) >= max(os.path.getmtime(s) for s in srcs):
        return exe
    bdir = os.path.dirname(exe)
    os.makedirs(bdir, exist_ok=True)
    flags = CFLAGS + list(extra_flags)
    avx2 = [s for s in srcs if s.endswith("_avx2.c")]
    cfiles = [s for s in srcs if s.endswith(".c") and s not in avx2]
    objs = []
    log(tag, f"building {os.path.basename(exe)} with smpicc")
    for a in avx2:
        obj = os.path.join(bdir, os.path.basename(exe) + "." + os.path.basename(a)[:-2] + ".o")
        r = subprocess.run(["smpicc", "-c", "-mavx2"] + flags + [a, "-o", obj], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{tag}: smpicc failed on {a}:\n{r.stderr[-3000:]}")
        objs.append(obj)
    cmd = ["smpicc"] + flags + cfiles + objs + ["-o", exe] + list(libs) + ["-lzstd", "-lxxhash", "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{tag}: smpicc failed:\n{r.stderr[-3000:]}")
    return exe


def _rate(v, unit_bits):
    """'10Gbps' -> bytes/s; '50us' -> seconds (unit_bits False)."""
    import re
    m = re.match(r"^([0-9.]+)([a-zA-Z]*)$", v)
    if not m:
        sys.exit(f"smpi: bad value {v}")
    x, u = float(m.group(1)), m.group(2)
    if unit_bits:
        return x * {"Gbps": 1e9, "Mbps": 1e6, "kbps": 1e3, "bps": 1}[u] / 8
    return x * {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[u]


def custom_platform(spec):
    """'net:BW:LAT' (e.g. net:10Gbps:10us): a 64-node cluster like gige64 whose
    links have bandwidth BW and an end-to-end latency LAT (two links of LAT/2,
    a non-blocking switch of 128 x BW). Returns (XML path, ZMPI_NET_BW, ZMPI_NET_LAT)."""
    _, bw, lat = spec.split(":")
    half = _rate(lat, False) / 2
    bb = _rate(bw, True) * 8 * 128
    path = os.path.join(ROOT, "build", "bench-smpi", f"net-{bw}-{lat}.xml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                f"<!-- {spec}: generated by bench/smpi/smpilib.py (as gige64.xml, other link bandwidth and latency) -->\n"
                "<platform version=\"4.1\">\n"
                f"  <cluster id=\"net\" prefix=\"node-\" suffix=\"\" radical=\"0-63\" speed=\"1Gf\" bw=\"{bw}\" "
                f"lat=\"{half * 1e6:g}us\" bb_bw=\"{bb:g}bps\" bb_lat=\"0us\" sharing_policy=\"SPLITDUPLEX\" "
                "bb_sharing_policy=\"SHARED\"/>\n</platform>\n")
    return path, f"{_rate(bw, True):g}B", lat


# Clusters of multi-core nodes (smp:NODESxCORES:NIC_BW:LAT): each node a host
# of CORES cores running CORES ranks (the hostfile names it CORES times), its
# NIC the host's split-duplex link (LAT/2 each way, a non-blocking switch),
# and traffic between ranks of one node on the host's loopback, shared by
# them: 50 GB/s and 0.3 us. Why those: MPICH and Open MPI move large
# intra-node messages by one copy through shared memory (CMA/XPMEM) or two
# through a bounce buffer; one copy streams at 10-20 GB/s per core pair on
# current x86 nodes, and a node's cores together reach about a quarter of
# its 200-400 GB/s memory bandwidth in copies (a copy reads and writes, and
# the eager path copies twice) - 50 GB/s aggregate; a small shared-memory
# message takes 0.2-0.5 us end to end. Both can be changed: SHM below.
SHM_BW, SHM_LAT = "50GBps", "0.3us"


def smp_spec(spec):
    """'smp:NODESxCORES:BW:LAT' -> (nodes, cores, BW, LAT); exits on a malformed spec."""
    import re
    m = re.match(r"^smp:([0-9]+)x([0-9]+):([0-9.]+[a-zA-Z]+):([0-9.]+[a-zA-Z]+)$", spec)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        sys.exit(f"smpi: {spec!r}: expected smp:NODESxCORES:NIC_BW:LAT, e.g. smp:8x8:25Gbps:2us")
    _rate(m.group(3), True), _rate(m.group(4), False)  # checks the units
    return int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)


def smp_platform(spec):
    """The files of 'smp:NODESxCORES:BW:LAT': (XML path, hostfile path, ZMPI_NET_BW, ZMPI_NET_LAT); the
    network told zmpi is one node's NIC."""
    nodes, cores, bw, lat = smp_spec(spec)
    half = _rate(lat, False) / 2
    bb = _rate(bw, True) * 8 * 2 * nodes
    name = spec.replace(":", "-")
    path = os.path.join(ROOT, "build", "bench-smpi", name + ".xml")
    hosts = os.path.join(ROOT, "build", "bench-smpi", name + ".hosts")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                f"<!-- {spec}: generated by bench/smpi/smpilib.py: {nodes} nodes of {cores} cores, one NIC of {bw} "
                f"per node, {lat} end to end, intra-node traffic on the loopback ({SHM_BW}, {SHM_LAT}) -->\n"
                "<platform version=\"4.1\">\n"
                f"  <cluster id=\"smp\" prefix=\"node-\" suffix=\"\" radical=\"0-{nodes - 1}\" speed=\"1Gf\" "
                f"core=\"{cores}\" bw=\"{bw}\" lat=\"{half * 1e6:g}us\" bb_bw=\"{bb:g}bps\" bb_lat=\"0us\" "
                f"loopback_bw=\"{SHM_BW}\" loopback_lat=\"{SHM_LAT}\" sharing_policy=\"SPLITDUPLEX\" "
                "bb_sharing_policy=\"SHARED\"/>\n</platform>\n")
    with open(hosts, "w") as f:
        for i in range(nodes):
            f.write(f"node-{i}\n" * cores)
    return path, hosts, f"{_rate(bw, True):g}B", lat


def platform_file(platform):
    """The XML of a platform name: one of PLATFORMS, net:BW:LAT, smp:NODESxCORES:BW:LAT, or a path to an XML
    file."""
    if platform.startswith("net:"):
        return custom_platform(platform)[0]
    if platform.startswith("smp:"):
        return smp_platform(platform)[0]
    if platform.endswith(".xml") and os.path.exists(platform):
        return platform
    plat = os.path.join(HERE, platform + ".xml")
    if not os.path.exists(plat):
        sys.exit(f"smpi: unknown platform {platform} (have: {', '.join(PLATFORMS)}, or an .xml file)")
    return plat


def platform_hostfile(platform, ranks, hosts=None):
    """The hostfile of a run: hosts (a file given with --hostfile), the smp platform's (ranks at most its
    cores), or one rank per node (hosts64.txt, or node-0 .. node-N-1)."""
    if hosts:
        return hosts
    if platform.startswith("smp:"):
        nodes, cores, _, _ = smp_spec(platform)
        if ranks > nodes * cores:
            sys.exit(f"smpi: {ranks} ranks on {platform}: at most {nodes * cores} (one per core)")
        return smp_platform(platform)[1]
    return os.path.join(HERE, "hosts64.txt") if ranks <= 64 else hostfile(ranks)


def smpirun_cmd(exe, platform, ranks, selector, cfg=(), args=(), hosts=None):
    return (["smpirun", "-np", str(ranks), "-platform", platform_file(platform), "-hostfile",
             platform_hostfile(platform, ranks, hosts),
             "--cfg=smpi/host-speed:1Gf", f"--cfg=smpi/coll-selector:{selector}", "--cfg=smpi/display-timing:no",
             "--log=root.thres:critical"] + SMPI_CFG + list(cfg) + [exe] + list(args))


def hostfile(ranks):
    path = os.path.join(ROOT, "build", "bench-smpi", f"hosts{ranks}.txt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i in range(ranks):
            f.write(f"node-{i}\n")
    return path


def net_env(platform, env=None, model=True):
    """The environment with zmpi told the platform's network (unless model is False)."""
    env = dict(os.environ if env is None else env)
    env.setdefault("ZMPI_DATA", os.path.join(ROOT, "..", "shared", "data"))
    net = NET.get(platform) or (custom_platform(platform)[1:] if platform.startswith("net:") else
                                smp_platform(platform)[2:] if platform.startswith("smp:") else None)
    if model and net:
        env.setdefault("ZMPI_NET_BW", net[0])
        env.setdefault("ZMPI_NET_LAT", net[1])
    return env

"""Compression at store time: bytes on the wire and fresh-hit req/s for a 20 KB HTML page.

Stoker (compresses once when it stores: br and gzip beside identity) against nginx
``proxy_cache`` with ``gzip on`` (compresses every hit, level 1, its default), each in
front of its own copy of the hit-path origin (bench/hit_path: identity 20 KB HTML,
``Cache-Control: public, max-age=3600``). Each system is pinned to one core
(``--server-core``), wrk to another (``--client-core``), one thread, ``--connections``
connections; cases are interleaved per round and the median is reported. Cases are the
client's ``Accept-Encoding``: none (identity), ``gzip``, and a browser's
``gzip, deflate, br`` (Stoker answers br, nginx gzip). "bytes/req" is wrk's bytes read
per response, headers included.

    .venv/bin/python bench/compression.py --rounds 3 --duration 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "hit_path"))

import run as hit_path

CASES = (("identity", None), ("gzip", "gzip"), ("browser", "gzip, deflate, br"))
GZIP_CONF = "    gzip on;\n    gzip_types text/html;\n    gzip_vary on;\n    access_log off;\n"


def nginx_gzip_system(tmp: Path) -> hit_path.System:
    """nginx proxy_cache as in the hit-path bench, plus ``gzip on`` (per-hit gzip)."""
    port = hit_path.free_port()
    origin = hit_path.Origin()
    conf = tmp / "nginx.conf"
    text = hit_path.nginx_config(tmp, port, origin.port)
    conf.write_text(text.replace("    access_log off;\n", GZIP_CONF, 1))
    argv = ["nginx", "-p", str(tmp), "-e", str(tmp / "nginx-error.log"), "-c", str(conf)]
    return hit_path.System("nginx-gzip", argv, port, origin, tmp / "nginx-gzip.log")


def wrk(url: str, accept: str | None, args: argparse.Namespace) -> hit_path.Measure:
    header = ["-H", f"Accept-Encoding: {accept}"] if accept else []
    argv = hit_path.pinned(args.client_core, [
        "wrk", "-t1", f"-c{args.connections}", f"-d{args.duration:g}s", "--latency", *header,
        url])  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=args.duration + 60)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    return hit_path.parse_wrk(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--server-core", type=int, default=1)
    parser.add_argument("--client-core", type=int, default=0)
    parser.add_argument("--stoker-bin", default=str(hit_path.VENV_BIN / "stoker"))
    args = parser.parse_args()
    args.stoker_arg = []
    tmp = Path(tempfile.mkdtemp(prefix="stoker-compression-"))
    tmp.chmod(0o755)
    port = hit_path.free_port()
    origin = hit_path.Origin()
    stoker = hit_path.System("stoker", hit_path.stoker_argv("stoker", tmp, port, origin.port,
                                                            args), port, origin, tmp / "s.log")
    systems = [stoker, nginx_gzip_system(tmp)]
    results: dict[str, list[hit_path.Measure]] = {}
    try:
        for system in systems:
            hit_path.start(system, args.server_core, 30.0)
            for _, accept in CASES:
                wrk(system.url, accept, argparse.Namespace(**{**vars(args), "duration": 1}))
        for _ in range(args.rounds):
            for system in systems:
                for case, accept in CASES:
                    measure = wrk(system.url, accept, args)
                    if measure.errors or measure.non_2xx:
                        raise RuntimeError(f"{system.name} {case}: {measure}")
                    results.setdefault(f"{system.name} {case}", []).append(measure)
        origin_hits = {system.name: system.origin.hits for system in systems if system.origin}
    finally:
        for system in systems:
            hit_path.stop(system)
            if system.origin is not None:
                system.origin.close()
    print(f"{'case':<22}{'req/s':>10}{'p99 ms':>9}{'bytes/req':>11}")
    for name, measures in results.items():
        print(f"{name:<22}{statistics.median(m.rps for m in measures):>10.0f}"
              f"{statistics.median(m.p99_ms for m in measures):>9.2f}"
              f"{statistics.median(m.bytes_per_request for m in measures):>11.0f}")
    print(f"origin hits: {origin_hits}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/python3
"""cm benchmark: rmdiag against the numpy peer (shared/peers/peer_cm.py) on the same full-size
input (137,000 pairs x 25 runs, 2,000 users, 1,000 bootstrap resamples), measured in the same
run, alternating, several repetitions; prints medians and ratios.

  in-process: rmdiag's report "seconds" (from the job's start to its report, HDF5 read included)
              vs the peer's own TIME total (read + compute + write, interpreter start excluded)
  process:    wall time of the whole command (rmdiag under mpiexec, or as a plain process)

usage: bench/bench_cm.py [--ranks 2] [--reps 7] [--shared ../shared] [--rmdiag build/rmdiag]
Goal (issue): in-process >= 4x faster than the peer, whole process faster than the peer's."""
import os

from benchlib import alternate, generate, header, options, peers_or_skip, rmdiag_cmd, row, write_job

a = options(__doc__)
peers = peers_or_skip(a, "peer_cm.py")
tmp, inp = generate(a, peers, "cm")
job = write_job(tmp, "bench-cm", {"kind": "cm", "input": "inputs.h5", "bootstrap": 1000})
peer_cmd = [a.python, os.path.join(peers, "peer_cm.py"), inp, os.path.join(tmp, "peer"), "--bootstrap", "1000"]
rd_in, rd_wall, pe_in, pe_wall = alternate(a, rmdiag_cmd(a, job), os.path.join(tmp, "out", "bench-cm.json"), peer_cmd)

print(f"cm benchmark: 137000 pairs x 25 runs, 2000 users, 1000 bootstrap resamples; rmdiag on "
      f"{a.ranks or 1} rank(s); medians of {a.reps} alternating runs")
print(header(12))
print(row("in-process", rd_in, pe_in, "(goal >= 4x)", 12))
print(row("process", rd_wall, pe_wall, "(goal > 1x)", 12))
print(f"(min in-process: rmdiag {min(rd_in):.4f}, peer {min(pe_in):.4f})")

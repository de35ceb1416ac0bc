"""The CPU kernels a run's numbers come from: the same on every x86-64 host.

PyTorch runs its vectorised operators (ATen), oneDNN's convolutions and MKL's products with kernels
for the widest instruction set the CPU has. AVX-512 kernels add in another order than AVX2 ones, so the same run
gives other numbers on a host with AVX-512: on Fashion-MNIST's default, 20 epochs turn the last-digit
differences into 0.1-0.5 points of per-class accuracy. mr2 therefore caps all three at AVX2, which every
x86-64 CPU of the last decade has, before torch runs its first operator (``pin_cpu_kernels``, called
when the package is imported): a run then gives the same model and the same numbers on such hosts
(checked digit for digit between AMD EPYC machines with and without AVX-512; Intel ones not checked).
A variable the user set already is kept; ``MR2_CPU_ISA=native`` lifts the cap (each host's fastest
kernels, numbers that depend on the host). Other CPUs (ARM) and CUDA are untouched. Standard library
only: this must run before torch is imported.
"""

import os
import platform
from collections.abc import MutableMapping

#: the variables that cap the instruction set of PyTorch's CPU kernels, and the cap mr2 sets: ATen's
#: vectorised operators, oneDNN's convolutions, and MKL's matrix products (its "conditional numerical
#: reproducibility" branch, so an Intel CPU takes the code path an AMD one does)
KERNEL_CAPS = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}
#: the variable that chooses: ``avx2`` (the default, the same numbers on every host) or ``native``
CHOICE = "MR2_CPU_ISA"
CHOICES = ("avx2", "native")
X86_64 = ("x86_64", "amd64")


def pin_cpu_kernels(environ: MutableMapping[str, str] | None = None, machine: str | None = None) -> dict[str, str]:
    """Cap PyTorch's CPU kernels at AVX2 on an x86-64 machine by setting ``KERNEL_CAPS`` in
    ``environ`` (``os.environ``), keeping a value already there; nothing with ``MR2_CPU_ISA=native``
    or on another machine. Returns the variables it set. A ``MR2_CPU_ISA`` other than ``avx2`` or
    ``native`` is an error naming it."""
    environ = os.environ if environ is None else environ
    choice = environ.get(CHOICE, CHOICES[0]).strip().lower() or CHOICES[0]
    if choice not in CHOICES:
        raise ValueError(f"environment variable {CHOICE}={environ[CHOICE]!r}: must be one of {CHOICES} "
                         "(avx2: the same numbers on every x86-64 host; native: each host's widest kernels)")
    machine = platform.machine() if machine is None else machine
    if choice == "native" or machine.lower() not in X86_64:
        return {}
    added = {name: value for name, value in KERNEL_CAPS.items() if name not in environ}
    environ.update(added)
    return added


#: every variable a run's CPU numbers depend on beyond its config (recorded in the run, compared on resume)
KERNEL_VARIABLES = (CHOICE, *KERNEL_CAPS)


def kernel_settings(environ: MutableMapping[str, str] | None = None) -> dict[str, str | None]:
    """The value of each of ``KERNEL_VARIABLES`` in ``environ`` (``os.environ``), None where unset."""
    environ = os.environ if environ is None else environ
    return {name: environ.get(name) for name in KERNEL_VARIABLES}


def _cpuinfo_field(name: str, cpuinfo: str | None) -> str | None:
    """The first value of field ``name`` in ``cpuinfo`` (the text of /proc/cpuinfo, read when None)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                cpuinfo = handle.read()
        except OSError:
            cpuinfo = ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name and value.strip():
            return " ".join(value.split())
    return None


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name (the first ``model name`` line of /proc/cpuinfo, else
    ``platform.processor()``, else ``unknown``): the machine a run's numbers were made on."""
    return _cpuinfo_field("model name", cpuinfo) or platform.processor() or "unknown"


def cpu_vendor(cpuinfo: str | None = None) -> str:
    """The CPU's vendor (``vendor_id`` of /proc/cpuinfo: GenuineIntel, AuthenticAMD, ...; else
    ``unknown``): runs of different vendors give other numbers and are never paired."""
    return _cpuinfo_field("vendor_id", cpuinfo) or "unknown"

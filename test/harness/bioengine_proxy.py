"""A stand-alone BioEngine-like registrant (Python, real hypha-rpc from .venv/hypha).

Registers `{workspace}/{prefix}-{sha1(app)[:8]}:{app}` (type bioengine-app,
visibility public) exactly like a BioEngine ProxyDeployment, then waits:
  SIGUSR1 -> unregister_service(app)   (prints "UNREGISTERED")
  SIGUSR2 -> register again            (prints "REGISTERED <full id>")
  SIGTERM -> disconnect and exit 0     (Hypha then drops the client's services)

The token is read from the file named by --token-file (never from argv, so it
does not show in `ps` or in logs).

    .venv/hypha/bin/python test/harness/bioengine_proxy.py --server-url URL \
        --token-file F [--workspace WS] --prefix PREFIX --app APP
"""
import argparse
import asyncio
import hashlib
import signal
import sys

from hypha_rpc import connect_to_server


def client_id_for(prefix: str, app: str) -> str:
    return f"{prefix}-{hashlib.sha1(app.encode('utf-8')).hexdigest()[:8]}"


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--server-url", required=True)
    p.add_argument("--token-file")
    p.add_argument("--workspace")
    p.add_argument("--prefix", required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--type", default="bioengine-app")
    a = p.parse_args()

    cfg = {"server_url": a.server_url, "client_id": client_id_for(a.prefix, a.app)}
    if a.token_file:
        with open(a.token_file, encoding="utf-8") as f:
            cfg["token"] = f.read().strip()
    if a.workspace:
        cfg["workspace"] = a.workspace
    server = await connect_to_server(cfg)

    async def register() -> None:
        info = await server.register_service(
            {
                "id": a.app,
                "name": a.app,
                "type": a.type,
                "config": {"visibility": "public", "require_context": True},
                "get_load": lambda context=None: 0.0,
                "ping": lambda context=None: "pong",
            },
            {"overwrite": True},
        )
        print(f"REGISTERED {info['id']}", flush=True)

    async def unregister() -> None:
        await server.unregister_service(a.app)
        print("UNREGISTERED", flush=True)

    await register()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    queue: asyncio.Queue = asyncio.Queue()
    loop.add_signal_handler(signal.SIGUSR1, lambda: queue.put_nowait("unregister"))
    loop.add_signal_handler(signal.SIGUSR2, lambda: queue.put_nowait("register"))
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)

    async def worker() -> None:
        while True:
            cmd = await queue.get()
            try:
                await (unregister() if cmd == "unregister" else register())
            except Exception as e:  # keep serving signals; the test reads stdout
                print(f"ERROR {cmd}: {e}", flush=True)

    task = asyncio.create_task(worker())
    await stop.wait()
    task.cancel()
    await server.disconnect()
    print("DISCONNECTED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

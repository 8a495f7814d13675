"""A stand-alone BioEngine-like registrant (Python, real hypha-rpc from .venv/hypha).

Registers what a BioEngine 0.16.1 ProxyDeployment registers
(aicell-lab/bioengine bioengine/apps/proxy_deployment.py `_register_services`):
  `{workspace}/{prefix}-{sha1(app)[:8]}:{app}`      type bioengine-app, public
  `{workspace}/{prefix}-{sha1(app)[:8]}:{app}-rtc`  no type (Hypha: generic), public,
        as hypha-rpc's register_rtc_service does when aiortc is installed
        (upstream's proxy runtime_env installs it; --no-rtc: a proxy without it)
Like upstream, every registration first disconnects and then reconnects under
the same client id; deregistration unregisters both services and keeps the
connection. Controlled by signals:
  SIGUSR1 -> deregister                 (prints "UNREGISTERED")
  SIGUSR2 -> disconnect, connect, register (prints "REGISTERED <full id>")
  SIGTERM -> deregister, disconnect, exit 0 (prints "DISCONNECTED")

The token is read from the file named by --token-file (never from argv, so it
does not show in `ps` or in logs).

    .venv/hypha/bin/python test/harness/bioengine_proxy.py --server-url URL \
        --token-file F [--workspace WS] --prefix PREFIX --app APP [--no-rtc]
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
    p.add_argument("--no-rtc", dest="rtc", action="store_false")
    a = p.parse_args()

    cfg = {"server_url": a.server_url, "client_id": client_id_for(a.prefix, a.app)}
    if a.token_file:
        with open(a.token_file, encoding="utf-8") as f:
            cfg["token"] = f.read().strip()
    if a.workspace:
        cfg["workspace"] = a.workspace
    state = {"server": None, "ids": []}

    async def disconnect() -> None:
        server, state["server"] = state["server"], None
        if server is not None:
            try:
                await asyncio.wait_for(server.disconnect(), timeout=2.0)
            except Exception as e:  # noqa: BLE001 - upstream only warns
                print(f"WARN disconnect: {e}", flush=True)

    async def register() -> None:
        await disconnect()
        server = await connect_to_server(cfg)
        state["server"] = server
        info = await server.register_service(
            {
                "id": a.app,
                "name": a.app,
                "type": a.type,
                "config": {"visibility": "public", "require_context": True},
                "get_load": lambda context=None: 0.0,
                "get_num_pcs": lambda context=None: 0,
                "ping": lambda context=None: "pong",
            }
        )
        state["ids"] = [info["id"]]
        if a.rtc:

            async def offer(*args, context=None, **kwargs):
                raise RuntimeError("WebRTC offers are not served by the test stand-in")

            rtc = await server.register_service(
                {"id": f"{a.app}-rtc", "config": {"visibility": "public", "require_context": True}, "offer": offer}
            )
            state["ids"].append(rtc["id"])
        print(f"REGISTERED {info['id']}", flush=True)

    async def unregister() -> None:
        for sid in state["ids"]:
            await state["server"].unregister_service(sid)
        state["ids"] = []
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
    if state["ids"] and state["server"] is not None:
        try:
            await unregister()
        except Exception as e:  # noqa: BLE001 - as upstream's __del__, best effort
            print(f"WARN deregister: {e}", flush=True)
    await disconnect()
    print("DISCONNECTED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

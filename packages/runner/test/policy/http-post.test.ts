import { once } from "node:events";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpPost, resendOnFreshSocket } from "../../src/policy/http-post.js";

/**
 * A raw HTTP/1.1 server whose `onRequest` decides, per request (its connection's number and the
 * request's number on it), to answer `200 ok` with keep-alive or to close the socket unanswered:
 * the race of a server closing an idle keep-alive socket as the next request arrives, made exact.
 */
async function rawServer(onRequest: (conn: number, nth: number) => "answer" | "close") {
  let conns = 0;
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    const conn = ++conns;
    sockets.push(socket);
    let buf = "";
    let nth = 0;
    socket.on("error", () => {});
    socket.on("data", (d) => {
      buf += d.toString("latin1");
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.slice(end + 4 + length);
        if (onRequest(conn, ++nth) === "close") {
          socket.destroy();
          return;
        }
        socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok");
      }
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
  return {
    url,
    connections: () => conns,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const post = (url: string) =>
  httpPost(url, { "content-type": "application/json" }, "{}", new AbortController().signal);
const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

describe("httpPost over keep-alive sockets", () => {
  it("resends on a fresh connection when the server closed the reused socket unanswered", async () => {
    // the second request on the first connection meets its close (the idle-timeout race)
    const s = await rawServer((conn, nth) => (conn === 1 && nth === 2 ? "close" : "answer"));
    closers.push(s.close);
    expect(await (await post(s.url)).text()).toBe("ok");
    const second = await post(s.url);
    expect(second.status).toBe(200);
    expect(await second.text()).toBe("ok");
    expect(s.connections()).toBe(2);
  });

  it("does not resend what a fresh connection lost (the server saw it: its failure is reported)", async () => {
    const s = await rawServer(() => "close");
    closers.push(s.close);
    await expect(post(s.url)).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(s.connections()).toBe(1);
  });

  it("resends only a reused socket's reset or broken pipe, before any answer", () => {
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(resendOnFreshSocket(true, false, reset)).toBe(true);
    expect(resendOnFreshSocket(true, false, Object.assign(new Error("x"), { code: "EPIPE" }))).toBe(true);
    expect(resendOnFreshSocket(false, false, reset)).toBe(false);
    expect(resendOnFreshSocket(true, true, reset)).toBe(false);
    expect(resendOnFreshSocket(true, false, Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe(
      false,
    );
  });
});

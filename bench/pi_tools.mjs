// pi's coding-agent tools (read, grep, find, ls, edit) driven without a model, for bench/peers.py.
//
// Usage: node bench/pi_tools.mjs <pi-coding-agent package dir> <cwd>
// Reads one JSON request a line on stdin, {"tool": "read", "params": {...}}, runs that tool's
// execute() as pi's agent loop would, and answers one JSON line on stdout:
// {"ms": <time inside execute>, "text": <the text content>} or {"ms": ..., "error": <message>}.
// The time is taken around execute() only, so the pipe to Python is not charged to pi.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, cwd] = process.argv.slice(2);
const tools = await import(pathToFileURL(join(packageDir, "dist", "core", "tools", "index.js")).href);
const cache = new Map();
let calls = 0;

function tool(name) {
  if (!cache.has(name)) cache.set(name, tools.createTool(name, cwd));
  return cache.get(name);
}

function text(result) {
  return (result.content ?? []).filter((part) => part.type === "text").map((part) => part.text).join("");
}

async function answer(line) {
  const request = JSON.parse(line);
  const started = performance.now();
  try {
    const result = await tool(request.tool).execute(`call-${++calls}`, request.params, undefined, undefined);
    return { ms: performance.now() - started, text: text(result) };
  } catch (error) {
    return { ms: performance.now() - started, error: String(error?.message ?? error) };
  }
}

process.stdout.write(JSON.stringify({ ready: true }) + "\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim()) process.stdout.write(JSON.stringify(await answer(line)) + "\n");
}

// Plays PersonalWAB episodes on pwab's MCP server with the official MCP TypeScript SDK client, and prints what the
// server answered as one JSON object on stdout (test/mcp/mcp_sdk_test.cpp compares it with pwab's own results).
//
//   node episode_client.mjs PLAN.json
//
// PLAN.json:
//   {"transport": {"url": "http://127.0.0.1:PORT/mcp"}            streamable HTTP
//              or {"command": "/path/pwab", "args": ["mcp", ...]}  stdio (the SDK spawns the server),
//    "list_tasks": {...list_tasks arguments},
//    "episodes": [{"start": {...start_episode arguments}, "calls": [{"name": "...", "arguments": {...}}]}]}
//
// Every episode is started, each call is made with the episode's id added to its arguments, and the episode is
// ended. Then two failures are provoked: a step on an episode that does not exist (a tool error) and a tool that
// does not exist (a JSON-RPC error). Over HTTP the MCP session is ended with DELETE at the close.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

function makeTransport(spec) {
  if (spec.url) return new StreamableHTTPClientTransport(new URL(spec.url));
  // stderr is inherited: the server's logs go to the test's output, never into the protocol stream.
  return new StdioClientTransport({ command: spec.command, args: spec.args ?? [], stderr: 'inherit' });
}

// What a test needs of one tools/call result.
function summarize(result) {
  return {
    isError: result.isError ?? false,
    texts: (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text),
    structured: result.structuredContent ?? null,
  };
}

async function call(client, name, args) {
  return summarize(await client.callTool({ name, arguments: args }));
}

async function playEpisode(client, episode) {
  const start = await call(client, 'start_episode', episode.start);
  if (start.isError) throw new Error(`start_episode failed: ${start.texts.join(' ')}`);
  const id = start.structured.episode_id;
  const steps = [];
  for (const c of episode.calls) steps.push(await call(client, c.name, { episode_id: id, ...c.arguments }));
  const state = await call(client, 'episode_state', { episode_id: id });
  const end = await call(client, 'end_episode', { episode_id: id });
  return { start, steps, state, end };
}

async function main() {
  const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  const transport = makeTransport(plan.transport);
  const client = new Client({ name: 'pwab-mcp-test-client', version: '1.0.0' });
  await client.connect(transport);

  const out = {
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions() ?? null,
    protocol_version: transport.protocolVersion ?? null,
    session_id: transport.sessionId ?? null,
  };
  out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema }));
  out.ping = await client.ping();
  out.info = await call(client, 'environment_info', {});
  out.tasks = await call(client, 'list_tasks', plan.list_tasks ?? {});
  out.episodes = [];
  for (const episode of plan.episodes) out.episodes.push(await playEpisode(client, episode));

  out.unknown_episode = await call(client, 'stop', { episode_id: 'no-such-episode' });
  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
    out.unknown_tool = { code: null };
  } catch (e) {
    out.unknown_tool = { code: e.code ?? null, message: e.message };
  }

  if (plan.transport.url) {
    await transport.terminateSession();
    out.session_after_delete = transport.sessionId ?? null;
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(`episode_client: ${e.stack ?? e}\n`);
  process.exit(1);
});

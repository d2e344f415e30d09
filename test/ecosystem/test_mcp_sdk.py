"""pwab's MCP server against the official MCP Python SDK 2.x client (package `mcp`, the core environment), over
stdio (`pwab mcp`) and streamable HTTP (`/mcp` of `pwab serve`), in each era the SDK speaks: the stateless
revision 2026-07-28 (no initialize, no session: what `mode="auto"` now settles on, probing `server/discover`
first) and the initialize handshake (`mode="legacy"`, 2025-11-25). Every observation, reward and score is
compared with the same actions on pwab's JSON API (docs/mcp.md)."""

import asyncio
import importlib.metadata
import os
import unittest

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests import world

STATELESS = "2026-07-28"


def first_search_task(client):
    """A test task and a query that finds something, from the server's own task list."""
    tasks = client.tasks(split="test", limit=50)["tasks"]
    return tasks[0]["task"], tasks[0]["instruction"][:80]


async def play(session_client, task, query):
    """One single-turn episode over MCP: start, search, end. Returns the three results' structured content."""
    started = await session_client.call_tool("start_episode", {"task": task, "track": "single"})
    if started.is_error:
        raise AssertionError(started.content[0].text)
    episode = started.structured_content["episode_id"]
    searched = await session_client.call_tool("search_product_by_query", {"episode_id": episode, "query": query})
    ended = await session_client.call_tool("end_episode", {"episode_id": episode})
    return started, searched, ended


class McpSdkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = world.server()
        cls.url = cls.server.url
        cls.api = cls.server.client()
        cls.task, cls.query = first_search_task(cls.api)
        # The reference: the same episode on the JSON API.
        start = cls.api.start(cls.task, track="single")
        cls.expected_step = cls.api.step(start["episode_id"], "search_product_by_query", {"query": cls.query})
        cls.expected_end = cls.api.end(start["episode_id"])

    def check_episode(self, started, searched, ended):
        self.assertEqual(started.structured_content["task"], self.task)
        self.assertEqual(searched.content[0].text, self.expected_step["observation"])
        self.assertEqual(searched.structured_content["reward"], self.expected_step["reward"])
        self.assertTrue(searched.structured_content["finished"])
        self.assertEqual(ended.structured_content["score"], self.expected_end["score"])
        self.assertGreater(len(searched.content[0].text), 0)

    def run_session(self, server, mode):
        async def go():
            async with Client(server, mode=mode) as client:
                version = client.protocol_version
                tools = (await client.list_tools()).tools
                names = {t.name for t in tools}
                episode = await play(client, self.task, self.query)
                # A call that cannot be made is a tool error the model sees, in every era.
                refused = await client.call_tool("end_episode", {"episode_id": "ep_nothing"})
                # An unknown tool is a protocol error: the SDK raises it.
                with self.assertRaises(MCPError):
                    await client.call_tool("no_such_tool", {})
                return version, names, episode, refused, client.server_info

        return asyncio.run(go())

    def check_all(self, result, version, pinned=False):
        got_version, names, episode, refused, info = result
        self.assertEqual(got_version, version)
        for name in ("start_episode", "end_episode", "search_product_by_query", "get_recommendations_by_history",
                     "add_product_review", "respond", "stop"):
            self.assertIn(name, names)
        self.check_episode(*episode)
        self.assertTrue(refused.is_error)
        self.assertEqual(refused.structured_content["error"]["code"], "unknown_episode")
        if pinned:
            # A pinned version adopts a made-up discover result without asking the server: no server info.
            self.assertIsNone(info)
        else:
            self.assertEqual(info.name, "pwab")

    # --- streamable HTTP ------------------------------------------------------------------------------------

    def test_http_auto_mode_speaks_the_stateless_revision(self):
        self.check_all(self.run_session(self.url + "/mcp", "auto"), STATELESS)

    def test_http_pinned_stateless_version(self):
        self.check_all(self.run_session(self.url + "/mcp", STATELESS), STATELESS, pinned=True)

    def test_http_legacy_handshake(self):
        self.check_all(self.run_session(self.url + "/mcp", "legacy"), "2025-11-25")

    def test_http_stateless_requests_carry_no_session(self):
        # What the SDK sends at 2026-07-28, replayed by hand: the reply opens no session, and a request whose
        # headers disagree with its envelope is refused with MCP's header-mismatch code.
        meta = {"io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
        headers = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": "tools/list",
                   "Accept": "application/json, text/event-stream"}
        with httpx2.Client() as http:
            ok = http.post(self.url + "/mcp", json=body, headers=headers)
            self.assertEqual(ok.status_code, 200, ok.text)
            self.assertNotIn("mcp-session-id", ok.headers)
            self.assertEqual(ok.json()["result"]["resultType"], "complete")
            wrong = http.post(self.url + "/mcp", json=body, headers={**headers, "Mcp-Method": "tools/call"})
            self.assertEqual(wrong.status_code, 400)
            self.assertEqual(wrong.json()["error"]["code"], -32020)

    # --- stdio (`pwab mcp`) ----------------------------------------------------------------------------------

    def stdio(self):
        return StdioServerParameters(command=world.binary(),
                                     args=["mcp", "--data", world.data_dir(), "--embedder", "hashing"],
                                     env=dict(os.environ))

    def test_stdio_auto_mode_speaks_the_stateless_revision(self):
        self.check_all(self.run_session(self.stdio(), "auto"), STATELESS)

    def test_stdio_legacy_handshake(self):
        self.check_all(self.run_session(self.stdio(), "legacy"), "2025-11-25")

    def test_the_sdk_is_2x(self):
        # The client that ran above is the official SDK's 2.x line (the pinned core environment has 2.3.0).
        self.assertEqual(importlib.metadata.version("mcp").split(".")[0], "2")


if __name__ == "__main__":
    unittest.main()

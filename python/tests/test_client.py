"""pwab.Client against a real `pwab serve`: every route, the typed errors, retries against a closed port."""

import socket
import time
import unittest

import pwab
from tests import world


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.client = world.server().client()

    def test_health_info_and_tasks(self):
        self.assertEqual(self.client.health()["status"], "healthy")
        info = self.client.info()
        self.assertIn("tools", info)
        page = self.client.tasks("test", offset=1, limit=2)
        self.assertEqual([t["task"] for t in page["tasks"]], ["test/1", "test/2"])
        every = list(self.client.iter_tasks("test", page=7))
        self.assertEqual(len(every), page["total"])
        self.assertEqual(every[0]["task"], "test/0")
        self.assertNotIn("target_asin", every[0])

    def test_an_episode_through_every_route(self):
        started = self.client.start("test/3", track="multi", seed=5)
        episode = started["episode_id"]
        self.assertTrue(started["observation"])
        answer = self.client.step(episode, "respond", {"content": "Any brand you prefer?"})
        self.assertFalse(answer["finished"])
        self.assertTrue(answer["observation"])
        self.assertEqual(self.client.state(episode)["steps"], 1)
        answer = self.client.step(episode, "search_product_by_query", '{"query": "usb cable"}')  # JSON text verbatim
        self.assertIn("reward", answer)
        ended = self.client.end(episode)
        self.assertEqual(ended["record"]["task"], "test/3")
        self.assertNotIn("target_asin", ended["record"])
        self.assertIn("r", ended["score"])

    def test_refusals_are_typed(self):
        with self.assertRaises(pwab.NotFound) as caught:
            self.client.state("ep_nope")
        self.assertEqual(caught.exception.status, 404)
        self.assertEqual(caught.exception.code, "unknown_episode")
        with self.assertRaises(pwab.NotFound):
            self.client.start("test/999999")
        with self.assertRaises(pwab.BadRequest):
            self.client.start("test/0", track="sideways")
        episode = self.client.start("test/0")["episode_id"]
        self.client.step(episode, "stop")
        with self.assertRaises(pwab.Conflict):  # a finished episode takes no step
            self.client.step(episode, "stop")
        self.client.delete(episode)
        self.assertTrue(issubclass(pwab.Conflict, pwab.PwabError))

    def test_an_unreachable_server_is_retried_then_named(self):
        with socket.socket() as s:  # a port that was free a moment ago: nobody listens
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        client = pwab.Client(f"http://127.0.0.1:{port}", retries=2, backoff=0.05)
        began = time.monotonic()
        with self.assertRaises(pwab.Unreachable) as caught:
            client.health()
        self.assertGreaterEqual(time.monotonic() - began, 0.05 + 0.1)  # two waits between three tries
        self.assertIn(str(port), str(caught.exception))

    def test_a_token_is_sent_and_required(self):
        with pwab.launch(world.data_dir(), args=["--embedder", "hashing"], token="s3cret-token") as served:
            self.assertEqual(served.client().health()["status"], "healthy")
            with self.assertRaises(pwab.Unauthorized):
                pwab.Client(served.url).health()


if __name__ == "__main__":
    unittest.main()

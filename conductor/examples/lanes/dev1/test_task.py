"""dev1's tests in lanes.toml: a placeholder, shipped so that the example runs as it is (they pass).

Put a failing test here, or point the lane's cwd and the gate at your own project's tests, and the
conductor prompts dev1 again after each of its turns until they pass (at most five rounds).
"""

import unittest


class Task(unittest.TestCase):
    def test_placeholder(self) -> None:
        self.assertEqual(sum([1, 2, 3]), 6)


if __name__ == "__main__":
    unittest.main()

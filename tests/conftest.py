"""Shared pytest configuration: the real-RocketMQ fixtures from tests/harness."""

pytest_plugins = ["tests.harness.plugin"]

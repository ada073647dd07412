"""Tests of the built-in RocketMQ emulator."""

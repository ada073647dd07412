"""Queue allocation as the Java client and broker compute it, and what-if simulation over it.

``strategies`` re-implements every ``AllocateMessageQueueStrategy`` bit for bit (plus the 5.x
broker's POP assignment); ``simulate`` answers "who would get which queue if …". Pure
computation: nothing here does I/O, and nothing imports the remoting, CLI or TUI layers.
"""

from __future__ import annotations

from rmqctl.rebalance.strategies import (
    STRATEGY_NAMES,
    AllocationError,
    AveragelyByCircleStrategy,
    AveragelyStrategy,
    ConfigStrategy,
    ConsistentHashStrategy,
    MachineRoomNearbyStrategy,
    MachineRoomStrategy,
    PopStrategy,
    RegexRoomResolver,
    RoomResolver,
    Strategy,
    UnknownStrategyError,
    allocate_avg,
    allocate_avg_by_circle,
    allocate_by_config,
    allocate_by_machine_room,
    allocate_consistent_hash,
    allocate_machine_room_nearby,
    allocate_pop,
    get_strategy,
    java_sorted_ids,
    java_sorted_queues,
)

__all__ = [
    "STRATEGY_NAMES",
    "AllocationError",
    "AveragelyByCircleStrategy",
    "AveragelyStrategy",
    "ConfigStrategy",
    "ConsistentHashStrategy",
    "MachineRoomNearbyStrategy",
    "MachineRoomStrategy",
    "PopStrategy",
    "RegexRoomResolver",
    "RoomResolver",
    "Strategy",
    "UnknownStrategyError",
    "allocate_avg",
    "allocate_avg_by_circle",
    "allocate_by_config",
    "allocate_by_machine_room",
    "allocate_consistent_hash",
    "allocate_machine_room_nearby",
    "allocate_pop",
    "get_strategy",
    "java_sorted_ids",
    "java_sorted_queues",
]

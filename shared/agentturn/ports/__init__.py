"""The ports (turn store, chat memory, resume queue, chat model) with their in-memory adapters."""

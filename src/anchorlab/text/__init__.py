"""Real-language data for the GPT-2 experiments."""

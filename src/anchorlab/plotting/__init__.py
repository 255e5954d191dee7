"""Figures from arrays and tables: no torch, no file reading, no training."""

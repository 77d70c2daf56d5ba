"""Renderers: terminal (rich) and JSON. They return strings or rich renderables; the CLI prints."""

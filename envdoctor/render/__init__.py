"""Every output in one room: the terminal, Markdown, JSON, HTML and the notebook display, all
speaking the words of `vocabulary`. Renderers read the report; nothing here probes or plans."""

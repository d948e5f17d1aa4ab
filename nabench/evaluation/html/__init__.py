"""The report as one self-contained HTML page with an item browser."""

from nabench.evaluation.html.data import browser_payload, encode_payload
from nabench.evaluation.html.page import html_table, render_html, write_html

__all__ = ["browser_payload", "encode_payload", "html_table", "render_html", "write_html"]

"""The Lambda handlers: one thin module per function (``functions/<name>/app.py``)."""

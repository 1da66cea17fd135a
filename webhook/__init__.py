"""The admission webhook (Flask app served by gunicorn); built in its own issue."""

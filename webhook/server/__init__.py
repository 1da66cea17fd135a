"""The admission webhook: AdmissionReview in, decision out, served by gunicorn over TLS."""

// MathJax is not loaded from a CDN: this site makes no external request (docs/conf.py).

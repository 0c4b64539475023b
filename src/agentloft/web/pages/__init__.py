"""One module per group of pages, each exposing ``router``; ``web/router.py`` lists them."""

"""Documents that are not plain text: Jupyter notebooks (by cell) and PDFs (by page).

The heavy parsers (nbformat, pypdf) are imported inside the functions that need them, so a
plain ``view`` of a text file never loads them.
"""

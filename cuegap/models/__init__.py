"""Pure statistics over DataFrames: rates, gaps, tests, hierarchical Bayesian models.

Depends only on pandas, numpy, scipy, statsmodels, pymc and arviz; never touches the
database, the ingest readers or the templates.
"""

"""Expressions: the package's own predicate form for data skipping (``predicates``), and the
Spark SQL subset that writers evaluate for constraints, generated columns and replaceWhere:
syntax tree (``ast``), parser (``parser``), Arrow evaluator (``evaluator``) with its casts
(``coercion``) and function table (``functions``); ``to_predicates`` turns a SQL condition
into skipping predicates."""

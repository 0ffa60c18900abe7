"""Expressions: the package's own predicate form for data skipping, and the Spark SQL subset
(parser and Arrow evaluator) that writers evaluate for constraints, generated columns and
replaceWhere."""

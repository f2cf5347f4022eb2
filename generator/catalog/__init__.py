"""The catalog stages: load the recipe tree, check its schemas, resolve a query into a RecipeResult (upstream AICR's rules)."""

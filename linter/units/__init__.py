"""Apply units and rendering: how a project is cut into units (`plan`), the GitOps objects that
declare them (`gitops`, `inline_values`), and their renders (`renders`, `render_cache`,
`kustomize`, `helm` and its child process and guards `helm_*`, `helmmap`, `rendered`, `tools`).

May import `policies`, `fieldwarden`'s own version, and of the lint core only its reading
modules: `loader` (kustomize, helm, inline_values) and `cache` (render_cache keeps its renders
in the lint's cache folder, under the cache's MAC). Never the engine, the command line or
`live/`. Keep this file free of imports (a plain lint loads only the modules it uses).
"""

/* Plain YAML straight to Python data, with a flat table of where each key and item stands.
 *
 * loader.load_plain() calls this before the full loader: libyaml's events become dicts, lists and
 * scalars without a node tree (composing the tree with its marks is most of a plain lint's parsing
 * time). Only the plain case is handled here; for anything else (anchors, aliases, tags, merge keys,
 * duplicate or complex keys, a syntax error, nesting deeper than asked, too many documents, any
 * Python error) load() answers None and the full loader reads the text, with its findings.
 *
 * The table: one entry of three unsigned ints (line, column, span) per mapping key and per sequence
 * item, in document order; line and column are libyaml's 0-based marks of the key or the item's
 * start, span the number of entries inside the value (so the next sibling is entry + 1 + span).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <yaml.h>
#include <string.h>

#define MEMO_MAX 100000
#define MEMO_TEXT_MAX 64

typedef struct {
    PyObject *container;     /* dict or list being filled (borrowed: the parent or the root holds it) */
    PyObject *key;           /* a mapping's key waiting for its value (owned), or NULL */
    int is_mapping;
    Py_ssize_t owner;        /* the entry (in the parent) whose span this container's end sets; -1 for a root */
} Frame;

typedef struct {
    unsigned int *cells;
    size_t used, size;       /* in cells */
} Table;

static int table_add(Table *table, const yaml_mark_t *mark) {
    if (table->used + 3 > table->size) {
        size_t size = table->size ? table->size * 2 : 3 * 1024;
        unsigned int *cells = PyMem_Realloc(table->cells, size * sizeof *cells);
        if (cells == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        table->cells = cells;
        table->size = size;
    }
    table->cells[table->used++] = (unsigned int)mark->line;
    table->cells[table->used++] = (unsigned int)mark->column;
    table->cells[table->used++] = 0;
    return 0;
}

/* A scalar's value: text, or what `resolve` makes of a plain text that may be no string. */
static PyObject *scalar_value(const yaml_event_t *event, PyObject *resolve, PyObject *memo, const char *implicit_first) {
    const char *text = (const char *)event->data.scalar.value;
    size_t length = event->data.scalar.length;
    PyObject *value = PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "strict");
    if (value == NULL || !event->data.scalar.plain_implicit)
        return value;
    if (length > 0 && strchr(implicit_first, text[0]) == NULL)
        return value;  /* (strchr also finds the terminating NUL: a text starting with one is resolved) */
    PyObject *known = PyDict_GetItemWithError(memo, value);
    if (known != NULL) {
        Py_INCREF(known);
        Py_DECREF(value);
        return known;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(value);
        return NULL;
    }
    PyObject *resolved = PyObject_CallOneArg(resolve, value);
    if (resolved != NULL && length <= MEMO_TEXT_MAX && PyDict_GET_SIZE(memo) < MEMO_MAX
            && PyDict_SetItem(memo, value, resolved) < 0)
        Py_CLEAR(resolved);
    Py_DECREF(value);
    return resolved;
}

/* The text a mapping key names, or NULL with no error set where the full loader must decide. */
static PyObject *key_text(const yaml_event_t *event) {
    const char *text = (const char *)event->data.scalar.value;
    size_t length = event->data.scalar.length;
    if (event->data.scalar.plain_implicit && length == 2 && text[0] == '<' && text[1] == '<')
        return NULL;  /* a merge key */
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "strict");
}

/* load(text, resolve, memo, implicit_first, max_depth, max_documents)
 *   -> (documents, table) or None, documents a list of
 *      (data, first entry, root line, root column, end line, end column), 0-based marks. */
static PyObject *plain_load(PyObject *module, PyObject *args) {
    PyObject *source, *resolve, *memo;
    const char *implicit_first;
    int max_depth, max_documents;
    if (!PyArg_ParseTuple(args, "UOO!sii", &source, &resolve, &PyDict_Type, &memo, &implicit_first,
                          &max_depth, &max_documents))
        return NULL;
    if (max_depth < 1 || max_depth > 10000) {
        PyErr_SetString(PyExc_ValueError, "max_depth out of range");
        return NULL;
    }
    Py_ssize_t size;
    const char *bytes = PyUnicode_AsUTF8AndSize(source, &size);
    if (bytes == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Frame *stack = PyMem_Calloc((size_t)max_depth, sizeof *stack);
    PyObject *documents = PyList_New(0);
    if (stack == NULL || documents == NULL) {
        PyMem_Free(stack);
        Py_XDECREF(documents);
        return PyErr_NoMemory();
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        PyMem_Free(stack);
        Py_DECREF(documents);
        return PyErr_NoMemory();
    }
    /* (no yaml_parser_set_encoding: libyaml finds UTF-8 and skips a BOM itself, as under PyYAML's CParser) */
    yaml_parser_set_input_string(&parser, (const unsigned char *)bytes, (size_t)size);

    Table table = {NULL, 0, 0};
    int depth = 0, plain = 1, finished = 0;
    PyObject *root = NULL;
    yaml_mark_t root_start = {0, 0, 0};
    Py_ssize_t root_entry = 0;
    while (plain && !finished) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) {
            plain = 0;  /* a syntax error: the full loader reports it */
            break;
        }
        PyObject *value = NULL;
        int opens = 0;
        yaml_mark_t end = event.end_mark;
        switch (event.type) {
        case YAML_STREAM_END_EVENT:
            finished = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (PyList_GET_SIZE(documents) >= max_documents)
                plain = 0;
            root_entry = (Py_ssize_t)(table.used / 3);
            break;
        case YAML_ALIAS_EVENT:
            plain = 0;
            break;
        case YAML_SCALAR_EVENT:
            if (event.data.scalar.anchor != NULL || event.data.scalar.tag != NULL) {
                plain = 0;
            } else if (depth > 0 && stack[depth - 1].is_mapping && stack[depth - 1].key == NULL) {
                Frame *top = &stack[depth - 1];
                PyObject *key = key_text(&event);
                int known = key == NULL ? -1 : PyDict_Contains(top->container, key);
                if (known != 0 || table_add(&table, &event.start_mark) < 0) {
                    Py_XDECREF(key);
                    plain = 0;  /* a merge key, a duplicate key, or a Python error */
                } else {
                    top->key = key;
                }
                yaml_event_delete(&event);
                continue;
            } else {
                value = scalar_value(&event, resolve, memo, implicit_first);
                if (value == NULL)
                    plain = 0;
            }
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            int mapping = event.type == YAML_MAPPING_START_EVENT;
            if ((mapping ? event.data.mapping_start.anchor != NULL || event.data.mapping_start.tag != NULL
                         : event.data.sequence_start.anchor != NULL || event.data.sequence_start.tag != NULL)
                    || depth >= max_depth) {
                plain = 0;
                break;
            }
            if (depth > 0 && stack[depth - 1].is_mapping && stack[depth - 1].key == NULL) {
                plain = 0;  /* a complex key */
                break;
            }
            value = mapping ? PyDict_New() : PyList_New(0);
            if (value == NULL)
                plain = 0;
            opens = 1;
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            if (depth == 0) {  /* (libyaml's events are balanced: never met) */
                plain = 0;
                break;
            }
            Frame *top = &stack[--depth];
            if (top->owner >= 0)
                table.cells[3 * top->owner + 2] = (unsigned int)(table.used / 3 - (size_t)top->owner - 1);
            if (depth == 0) {
                PyObject *document = Py_BuildValue("(OnIIII)", root, root_entry, (unsigned int)root_start.line,
                                                   (unsigned int)root_start.column, (unsigned int)end.line,
                                                   (unsigned int)end.column);
                Py_CLEAR(root);
                if (document == NULL || PyList_Append(documents, document) < 0)
                    plain = 0;
                Py_XDECREF(document);
            }
            break;
        }
        default:
            break;
        }
        if (value != NULL) {
            Py_ssize_t owner = -1;
            if (depth == 0) {
                root_start = event.start_mark;
                if (!opens) {  /* a scalar document */
                    PyObject *document = Py_BuildValue("(OnIIII)", value, root_entry, (unsigned int)root_start.line,
                                                       (unsigned int)root_start.column, (unsigned int)end.line,
                                                       (unsigned int)end.column);
                    if (document == NULL || PyList_Append(documents, document) < 0)
                        plain = 0;
                    Py_XDECREF(document);
                } else {
                    root = value;
                    Py_INCREF(root);
                }
            } else {
                Frame *top = &stack[depth - 1];
                if (top->is_mapping) {
                    owner = (Py_ssize_t)(table.used / 3) - 1;  /* the key's entry */
                    if (PyDict_SetItem(top->container, top->key, value) < 0)
                        plain = 0;
                    Py_CLEAR(top->key);
                } else {
                    owner = (Py_ssize_t)(table.used / 3);
                    if (table_add(&table, &event.start_mark) < 0 || PyList_Append(top->container, value) < 0)
                        plain = 0;
                }
            }
            if (opens && plain) {
                stack[depth].container = value;  /* (held by its parent, or by `root`) */
                stack[depth].key = NULL;
                stack[depth].is_mapping = event.type == YAML_MAPPING_START_EVENT;
                stack[depth].owner = owner;
                depth++;
            }
            Py_DECREF(value);
        }
        yaml_event_delete(&event);
    }
    yaml_parser_delete(&parser);
    while (depth > 0) {
        depth--;  /* (not inside Py_CLEAR: the macro names its argument twice) */
        Py_CLEAR(stack[depth].key);
    }
    Py_XDECREF(root);
    PyMem_Free(stack);
    PyObject *result = NULL;
    if (plain) {
        PyObject *cells = PyBytes_FromStringAndSize((const char *)table.cells, (Py_ssize_t)(table.used * sizeof *table.cells));
        if (cells == NULL)
            Py_DECREF(documents);
        else
            result = Py_BuildValue("(NN)", documents, cells);  /* (N: both given to the tuple, or released) */
    } else {
        Py_DECREF(documents);
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) {
            PyMem_Free(table.cells);
            return NULL;  /* KeyboardInterrupt and the like (from the resolver): not a reason to fall back */
        }
        PyErr_Clear();
        result = Py_None;
        Py_INCREF(result);
    }
    PyMem_Free(table.cells);
    return result;
}

/* -- project(): analyse._take over a table, for data load() made ------------------------------------ */

typedef struct {
    const unsigned int *cells;
    Py_ssize_t entries;
    PyObject *locations;     /* path -> (line, column), 1-based */
    PyObject *paths;         /* path -> the same path, shared (analyse._PATHS) */
    Py_ssize_t paths_max;
    PyObject *star;          /* "*" */
} Projection;

static int entry_ok(const Projection *p, Py_ssize_t entry) {
    if (entry < 0 || entry >= p->entries) {
        PyErr_SetString(PyExc_ValueError, "position table does not match the data");
        return 0;
    }
    return 1;
}

static Py_ssize_t next_sibling(const Projection *p, Py_ssize_t entry) {
    return entry + 1 + (Py_ssize_t)p->cells[3 * entry + 2];
}

/* done + (step,), shared through `paths` while it has room (a new reference) */
static PyObject *path_to(Projection *p, PyObject *done, PyObject *step) {
    Py_ssize_t length = PyTuple_GET_SIZE(done);
    PyObject *path = PyTuple_New(length + 1);
    if (path == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < length; i++) {
        PyObject *part = PyTuple_GET_ITEM(done, i);
        Py_INCREF(part);
        PyTuple_SET_ITEM(path, i, part);
    }
    Py_INCREF(step);
    PyTuple_SET_ITEM(path, length, step);
    PyObject *shared = PyDict_GetItemWithError(p->paths, path);
    if (shared != NULL) {
        Py_INCREF(shared);
        Py_DECREF(path);
        return shared;
    }
    if (PyErr_Occurred() || (PyDict_GET_SIZE(p->paths) < p->paths_max && PyDict_SetItem(p->paths, path, path) < 0)) {
        Py_DECREF(path);
        return NULL;
    }
    return path;
}

static int record(Projection *p, PyObject *path, Py_ssize_t entry) {
    PyObject *position = Py_BuildValue("(II)", p->cells[3 * entry] + 1, p->cells[3 * entry + 1] + 1);
    int failed = position == NULL || PyDict_SetItem(p->locations, path, position) < 0;
    Py_XDECREF(position);
    return failed ? -1 : 0;
}

/* {} for a dict, [None] * len for a list (a new reference) */
static PyObject *scratch(PyObject *value) {
    if (PyDict_CheckExact(value))
        return PyDict_New();
    Py_ssize_t length = PyList_GET_SIZE(value);
    PyObject *list = PyList_New(length);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(list, i, Py_None);
    }
    return list;
}

static int is_container(PyObject *value) { return PyDict_CheckExact(value) || PyList_CheckExact(value); }

static int take(Projection *p, PyObject *src, PyObject *dst, Py_ssize_t first, PyObject *tree, PyObject *done);

/* take() into a fresh scratch copy of `value`, for the positions below it only */
static int take_apart(Projection *p, PyObject *value, Py_ssize_t first, PyObject *tree, PyObject *done) {
    PyObject *copy = scratch(value);
    int result = copy == NULL ? -1 : take(p, value, copy, first, tree, done);
    Py_XDECREF(copy);
    return result;
}

static int take_items(Projection *p, PyObject *src, PyObject *dst, Py_ssize_t first, PyObject *tree, PyObject *done) {
    PyObject *star = PyDict_GetItemWithError(tree, p->star);
    if (star == NULL)
        return PyErr_Occurred() ? -1 : 0;
    int ends = PyObject_IsTrue(PyTuple_GET_ITEM(star, 0));
    PyObject *deeper = PyTuple_GET_ITEM(star, 1);
    Py_ssize_t entry = first;
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(src); index++) {
        if (!entry_ok(p, entry))
            return -1;
        PyObject *item = PyList_GET_ITEM(src, index);
        PyObject *number = PyLong_FromSsize_t(index);
        PyObject *here = number == NULL ? NULL : path_to(p, done, number);
        Py_XDECREF(number);
        if (here == NULL || record(p, here, entry) < 0)
            goto failed_here;
        if (ends) {
            Py_INCREF(item);
            if (PyList_SetItem(dst, index, item) < 0)
                goto failed_here;
        }
        if (PyDict_GET_SIZE(deeper) > 0) {
            if (PyList_GET_ITEM(dst, index) == Py_None) {
                PyObject *made = is_container(item) ? scratch(item) : (Py_INCREF(item), item);
                if (made == NULL || PyList_SetItem(dst, index, made) < 0)
                    goto failed_here;
            }
            if (is_container(item)) {
                int result = ends ? take_apart(p, item, entry + 1, deeper, here)
                                  : take(p, item, PyList_GET_ITEM(dst, index), entry + 1, deeper, here);
                if (result < 0)
                    goto failed_here;
            }
        }
        Py_DECREF(here);
        entry = next_sibling(p, entry);
        continue;
    failed_here:
        Py_XDECREF(here);
        return -1;
    }
    return 0;
}

#define KNOWN_MAX 128

static int take(Projection *p, PyObject *src, PyObject *dst, Py_ssize_t first, PyObject *tree, PyObject *done) {
    if (PyList_CheckExact(src))
        return PyList_CheckExact(dst) ? take_items(p, src, dst, first, tree, done) : 0;
    if (!PyDict_CheckExact(src) || !PyDict_CheckExact(dst))
        return 0;
    /* the entries of src's keys that the tree names, in one pass over src (its keys are in the text's order) */
    PyObject *known_keys[KNOWN_MAX];
    Py_ssize_t known_entries[KNOWN_MAX];
    int known = 0;
    Py_ssize_t position = 0, entry = first;
    PyObject *key, *value;
    while (PyDict_Next(src, &position, &key, &value)) {
        if (!entry_ok(p, entry))
            return -1;
        int wanted = PyDict_Contains(tree, key);
        if (wanted < 0)
            return -1;
        if (wanted) {
            if (known == KNOWN_MAX) {
                PyErr_SetString(PyExc_ValueError, "a mapping with more of the tree's keys than project() keeps");
                return -1;
            }
            known_keys[known] = key;
            known_entries[known++] = entry;
        }
        entry = next_sibling(p, entry);
    }
    position = 0;
    PyObject *part, *step;
    while (PyDict_Next(tree, &position, &part, &step)) {
        if (PyUnicode_CompareWithASCIIString(part, "*") == 0)
            continue;
        Py_ssize_t at = -1;
        for (int i = 0; i < known && at < 0; i++) {
            int same = PyObject_RichCompareBool(known_keys[i], part, Py_EQ);
            if (same < 0)
                return -1;
            if (same)
                at = known_entries[i];
        }
        if (at < 0)
            continue;  /* not in src */
        value = PyDict_GetItemWithError(src, part);
        if (value == NULL) {
            if (PyErr_Occurred())
                return -1;
            continue;
        }
        Py_INCREF(value);
        int ends = PyObject_IsTrue(PyTuple_GET_ITEM(step, 0));
        PyObject *deeper = PyTuple_GET_ITEM(step, 1);
        PyObject *here = path_to(p, done, part);
        int failed = here == NULL || record(p, here, at) < 0;
        if (!failed && ends) {
            failed = PyDict_SetItem(dst, part, value) < 0;
            if (!failed && PyDict_GET_SIZE(deeper) > 0 && is_container(value))
                failed = take_apart(p, value, at + 1, deeper, here) < 0;
        } else if (!failed && PyDict_CheckExact(value)) {
            PyObject *fresh = PyDict_New();
            PyObject *inner = fresh == NULL ? NULL : PyDict_SetDefault(dst, part, fresh);  /* (borrowed) */
            Py_XDECREF(fresh);
            failed = inner == NULL || take(p, value, inner, at + 1, deeper, here) < 0;
        } else if (!failed && PyList_CheckExact(value)) {
            PyObject *existing = PyDict_GetItemWithError(dst, part);
            if (existing == NULL && PyErr_Occurred()) {
                failed = 1;
            } else if (existing == NULL || !PyList_CheckExact(existing)) {
                PyObject *fresh = scratch(value);
                failed = fresh == NULL || PyDict_SetItem(dst, part, fresh) < 0;
                existing = fresh;
                Py_XDECREF(fresh);  /* (dst holds it) */
            }
            if (!failed)
                failed = take(p, value, existing, at + 1, deeper, here) < 0;
        } else if (!failed) {
            failed = PyDict_SetItem(dst, part, value) < 0;
        }
        Py_XDECREF(here);
        Py_DECREF(value);
        if (failed)
            return -1;
    }
    return 0;
}

/* project(obj, cells, first, tree, locations, paths, paths_max) -> the projection of obj (analyse._project) */
static PyObject *plain_project(PyObject *module, PyObject *args) {
    PyObject *obj, *tree, *locations, *paths;
    Py_buffer cells;
    Py_ssize_t first, paths_max;
    if (!PyArg_ParseTuple(args, "Oy*nO!O!O!n", &obj, &cells, &first, &PyDict_Type, &tree, &PyDict_Type, &locations,
                          &PyDict_Type, &paths, &paths_max))
        return NULL;
    Projection p = {(const unsigned int *)cells.buf, cells.len / (Py_ssize_t)(3 * sizeof(unsigned int)), locations, paths,
                    paths_max, PyUnicode_InternFromString("*")};
    PyObject *out = PyDict_New();
    PyObject *done = PyTuple_New(0);
    if (p.star == NULL || out == NULL || done == NULL || take(&p, obj, out, first, tree, done) < 0)
        Py_CLEAR(out);
    Py_XDECREF(done);
    Py_XDECREF(p.star);
    PyBuffer_Release(&cells);
    return out;
}

static PyMethodDef methods[] = {
    {"load", plain_load, METH_VARARGS,
     "load(text, resolve, memo, implicit_first, max_depth, max_documents) -> (documents, table) or None"},
    {"project", plain_project, METH_VARARGS,
     "project(obj, cells, first, tree, locations, paths, paths_max) -> the fields of obj the tree names"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_plainyaml", "Plain YAML to data and a position table.", -1, methods};

PyMODINIT_FUNC PyInit__plainyaml(void) { return PyModule_Create(&module); }

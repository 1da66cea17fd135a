/* Whether an object fits a compiled schema with no problem at all: validate.py's walk, in C, for the
 * common case. fits(compiled, obj) answers True only where validate.validate() would find nothing; on
 * anything else (a problem, a shape it does not know, a Python error, deep nesting) it answers False
 * and validate.py walks the object itself, for the problems and their paths. The node layout is
 * validate.py's (TYPES, PROPERTIES, REQUIRED, ITEMS, MORE, ENUM, FLAGS).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

enum { OBJECT = 1, ARRAY = 2, STRING = 4, INTEGER = 8, NUMBER = 16, BOOLEAN = 32, NUL = 64 };
enum { ANY = -1, DENY = -2 };
enum { TYPES, PROPERTIES, REQUIRED, ITEMS, MORE, ENUM, FLAGS, SLOTS };
#define EMBEDDED 1
#define DEPTH_MAX 500

static long bits_of(PyObject *value) {
    if (PyUnicode_CheckExact(value))
        return STRING;
    if (PyDict_CheckExact(value))
        return OBJECT;
    if (PyList_CheckExact(value))
        return ARRAY;
    if (PyBool_Check(value))
        return BOOLEAN;
    if (PyLong_CheckExact(value))
        return INTEGER | NUMBER;
    if (PyFloat_CheckExact(value)) {
        double number = PyFloat_AS_DOUBLE(value);
        return isfinite(number) && floor(number) == number ? INTEGER | NUMBER : NUMBER;
    }
    if (value == Py_None)
        return NUL;
    return STRING;
}

static int embedded_field(PyObject *key) {
    return PyUnicode_Check(key) && (PyUnicode_CompareWithASCIIString(key, "apiVersion") == 0
                                    || PyUnicode_CompareWithASCIIString(key, "kind") == 0
                                    || PyUnicode_CompareWithASCIIString(key, "metadata") == 0);
}

/* a slot of a node that must be an int (an index or bits); 0 with *ok cleared if it is not */
static long slot_int(PyObject *node, int slot, int *ok) {
    PyObject *item = PyList_GET_ITEM(node, slot);
    if (!PyLong_CheckExact(item)) {
        *ok = 0;
        return 0;
    }
    long value = PyLong_AsLong(item);
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        *ok = 0;
    }
    return value;
}

/* 1: fits; 0: does not, or cannot tell (no Python error is left set) */
static int fits(PyObject *compiled, long index, PyObject *value, int depth) {
    Py_ssize_t count = PyList_GET_SIZE(compiled);
    if (depth > DEPTH_MAX)
        return 0;
    if (index < 0)
        index += (long)count;  /* (a Python index: validate.py does compiled[child] with a child of -1 too) */
    if (index < 0 || index >= count)
        return 0;
    PyObject *node = PyList_GET_ITEM(compiled, index);
    if (!PyList_CheckExact(node) || PyList_GET_SIZE(node) < SLOTS)
        return 0;
    int ok = 1;
    long types = slot_int(node, TYPES, &ok);
    if (!ok)
        return 0;
    if (types && !(bits_of(value) & types))
        return 0;
    if (value == Py_None)
        return 1;
    PyObject *allowed = PyList_GET_ITEM(node, ENUM);
    if (allowed != Py_None) {
        int found = PySequence_Contains(allowed, value);
        if (found != 1) {
            PyErr_Clear();
            return 0;
        }
    }
    if (PyDict_CheckExact(value)) {
        PyObject *properties = PyList_GET_ITEM(node, PROPERTIES), *required = PyList_GET_ITEM(node, REQUIRED);
        long more = slot_int(node, MORE, &ok), flags = slot_int(node, FLAGS, &ok);
        if (!ok || !PyDict_CheckExact(properties) || !PyList_CheckExact(required))
            return 0;
        Py_ssize_t position = 0;
        PyObject *key, *sub;
        while (PyDict_Next(value, &position, &key, &sub)) {
            PyObject *declared = PyDict_GetItemWithError(properties, key);
            long child;
            if (declared != NULL) {
                if (!PyLong_CheckExact(declared))
                    return 0;
                child = PyLong_AsLong(declared);
                if (child == -1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return 0;
                }
            } else {
                if (PyErr_Occurred()) {
                    PyErr_Clear();
                    return 0;
                }
                child = more;
                if (child == DENY) {
                    if ((flags & EMBEDDED) && embedded_field(key))
                        continue;
                    return 0;
                }
                if (child == ANY)
                    continue;
            }
            if (!fits(compiled, child, sub, depth + 1))
                return 0;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(required); i++) {
            int present = PyDict_Contains(value, PyList_GET_ITEM(required, i));
            if (present != 1) {
                PyErr_Clear();
                return 0;
            }
        }
    } else if (PyList_CheckExact(value)) {
        long items = slot_int(node, ITEMS, &ok);
        if (!ok)
            return 0;
        if (items != ANY)
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++)
                if (!fits(compiled, items, PyList_GET_ITEM(value, i), depth + 1))
                    return 0;
    }
    return 1;
}

static PyObject *schema_fits(PyObject *module, PyObject *args) {
    PyObject *compiled, *value;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &compiled, &value))
        return NULL;
    return PyBool_FromLong(fits(compiled, 0, value, 0));
}

static PyMethodDef methods[] = {
    {"fits", schema_fits, METH_VARARGS, "fits(compiled, obj) -> True where validate() would find no problem"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fits", "Whether an object fits a compiled schema.", -1, methods};

PyMODINIT_FUNC PyInit__fits(void) { return PyModule_Create(&module); }

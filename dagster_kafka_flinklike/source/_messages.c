/*
 * Fields of a batch of consumed messages (confluent-kafka Message objects) into Arrow buffers,
 * in one pass over the messages each, without a Python list or a Python frame per message: the
 * reader's tasks spend their time per record, and building each field through Python lists cost
 * about as much as consuming.
 *
 * Each function takes the messages and the Message method that gives the field (so nothing here
 * depends on confluent-kafka's internals) and returns the Arrow buffers of the field's array.
 * The method is Python code that may change the list: the messages are read from a tuple taken
 * before the first call, which also holds a reference to each of them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static PyObject *as_bytes(const void *data, Py_ssize_t size) {
    return PyBytes_FromStringAndSize((const char *)data, size);
}

/* (validity bitmap or None, bitmap bytes) from the bits set; None when all are set. */
static PyObject *validity_or_none(uint8_t *bits, Py_ssize_t n, Py_ssize_t valid) {
    if (valid == n)
        Py_RETURN_NONE;
    return as_bytes(bits, (n + 7) / 8);
}

/* The messages argument (a list) as a new tuple of its items, or NULL with an exception set. */
static PyObject *snapshot(PyObject *args, PyObject **method) {
    PyObject *messages;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &messages, method))
        return NULL;
    return PyList_AsTuple(messages);
}

PyDoc_STRVAR(timestamps_doc,
    "timestamps(messages, method) -> (validity or None, microseconds, out_of_range)\n\n"
    "`method(message)` is (type, milliseconds) (Message.timestamp): the microseconds since the\n"
    "epoch as int64 values, null where the type is 0 (no timestamp) and where the milliseconds\n"
    "have no int64 microseconds (|ms| > 9223372036854775); those are listed in out_of_range as\n"
    "(index, type, milliseconds).");

static PyObject *timestamps(PyObject *self, PyObject *args) {
    PyObject *method;
    (void)self;
    PyObject *messages = snapshot(args, &method);
    if (messages == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(messages);
    int64_t *micros = calloc((size_t)(n ? n : 1), sizeof(int64_t));
    uint8_t *bits = calloc((size_t)((n + 7) / 8 + 1), 1);
    PyObject *out_of_range = PyList_New(0);
    PyObject *result = NULL;
    Py_ssize_t valid = 0;
    if (out_of_range == NULL)
        goto done;
    if (micros == NULL || bits == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *message = PyTuple_GET_ITEM(messages, i);
        PyObject *stamp = PyObject_Vectorcall(method, &message, 1, NULL);
        if (stamp == NULL)
            goto done;
        if (!PyTuple_Check(stamp) || PyTuple_GET_SIZE(stamp) != 2) {
            Py_DECREF(stamp);
            PyErr_SetString(PyExc_TypeError, "a timestamp must be a (type, milliseconds) tuple");
            goto done;
        }
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(stamp, 0));
        long long millis = PyLong_AsLongLong(PyTuple_GET_ITEM(stamp, 1));
        Py_DECREF(stamp);
        if ((kind == -1 || millis == -1) && PyErr_Occurred())
            goto done;
        if (kind == 0)
            continue;
        int64_t value;
        if (__builtin_mul_overflow((int64_t)millis, (int64_t)1000, &value)) {
            PyObject *entry = Py_BuildValue("(nlL)", i, kind, millis);
            if (entry == NULL || PyList_Append(out_of_range, entry) < 0) {
                Py_XDECREF(entry);
                goto done;
            }
            Py_DECREF(entry);
            continue;
        }
        micros[i] = value;
        bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        valid++;
    }
    result = Py_BuildValue("(NNO)", validity_or_none(bits, n, valid),
                           as_bytes(micros, (Py_ssize_t)sizeof(int64_t) * n), out_of_range);
done:
    Py_DECREF(messages);
    Py_XDECREF(out_of_range);
    free(micros);
    free(bits);
    return result;
}

PyDoc_STRVAR(binaries_doc,
    "binaries(messages, method) -> (validity or None, offsets, data)\n\n"
    "`method(message)` is bytes or None (Message.value, Message.key): the buffers of an Arrow\n"
    "binary array (int32 offsets) of them, null where None.");

static PyObject *binaries(PyObject *self, PyObject *args) {
    PyObject *method;
    (void)self;
    PyObject *messages = snapshot(args, &method);
    if (messages == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(messages);
    int32_t *offsets = malloc(sizeof(int32_t) * (size_t)(n + 1));
    uint8_t *bits = calloc((size_t)((n + 7) / 8 + 1), 1);
    char *data = NULL;
    Py_ssize_t used = 0, capacity = 0, valid = 0;
    PyObject *result = NULL;
    if (offsets == NULL || bits == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *message = PyTuple_GET_ITEM(messages, i);
        PyObject *field = PyObject_Vectorcall(method, &message, 1, NULL);
        if (field == NULL)
            goto done;
        if (field != Py_None) {
            if (!PyBytes_Check(field)) {
                Py_DECREF(field);
                PyErr_SetString(PyExc_TypeError, "a message field must be bytes or None");
                goto done;
            }
            Py_ssize_t size = PyBytes_GET_SIZE(field);
            if (used + size > INT32_MAX) {
                Py_DECREF(field);
                PyErr_SetString(PyExc_OverflowError, "a batch's field exceeds 2 GiB");
                goto done;
            }
            if (used + size > capacity) {
                Py_ssize_t grown = capacity ? capacity : 65536;
                while (grown < used + size)
                    grown *= 2;
                char *bigger = realloc(data, (size_t)grown);
                if (bigger == NULL) {
                    Py_DECREF(field);
                    PyErr_NoMemory();
                    goto done;
                }
                data = bigger;
                capacity = grown;
            }
            if (size > 0)
                memcpy(data + used, PyBytes_AS_STRING(field), (size_t)size);
            used += size;
            bits[i >> 3] |= (uint8_t)(1u << (i & 7));
            valid++;
        }
        Py_DECREF(field);
        offsets[i + 1] = (int32_t)used;
    }
    result = Py_BuildValue("(NNN)", validity_or_none(bits, n, valid),
                           as_bytes(offsets, (Py_ssize_t)sizeof(int32_t) * (n + 1)),
                           as_bytes(data ? data : "", used));
done:
    Py_DECREF(messages);
    free(offsets);
    free(bits);
    free(data);
    return result;
}

static PyMethodDef METHODS[] = {
    {"timestamps", timestamps, METH_VARARGS, timestamps_doc},
    {"binaries", binaries, METH_VARARGS, binaries_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_messages",
    "Fields of a batch of consumed messages into Arrow buffers.", -1, METHODS,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__messages(void) { return PyModule_Create(&MODULE); }

"""cm-csv categorical covariates and the user split at import: a covariate column with any cell that is not a
number is written as strings (the category names, "" where missing), a numeric one as float64 as before;
a pair's covariate must be the same on all its rows (as numbers when both cells are numbers, else as
text); a user split inconsistently within a run is exit 2 at import naming the CSV lines, the user's own
id, the run and both pairs, and nothing is written."""
import os

from rdtest import *

d = scratch("import_cm_categorical")


def write(name, text):
    p = os.path.join(d, name)
    with open(p, "w", newline="") as f:
        f.write(text)
    return p


OUT = os.path.join(d, "o", "out.h5")
os.makedirs(os.path.dirname(OUT), exist_ok=True)
HEAD = "run,pair,user,reward_chosen,reward_rejected,in_train"

# pairs 10, 11, 12, 13 (numeric order), two runs; source: names with a missing one; len: numbers ("5" and "5.0"
# are one value); grade: numbers and a letter, so categorical: each distinct text a category ("1.0" is not "1")
csv = write("cat.csv", HEAD + ",source,len,grade\n"
            "0,11,u1,1,0,1,human,3,1\n"
            "0,10,u2,2,0,0,\"gpt-4, turbo\",NA,A\n"
            "0,12,u1,1,1,1,,5,2\n"
            "0,13,u3,0,1,1,human,7,1.0\n"
            "1,11,u1,1,0,0,human,3,1\n"
            "1,10,u2,2,0,1,\"gpt-4, turbo\",,A\n"
            "1,12,u1,1,1,0,NA,5.0,2\n"
            "1,13,u3,0,1,0,human,7,1.0\n")
code, _, err = run(["import", "cm-csv", csv, "-o", OUT])
check(code == 0, f"import with categorical covariates ({err.strip()})")
check("covariate source: categorical (2 categories; line 2 has the first cell that is not a number), 1 pairs missing"
      in err, f"source summarised: {err}")
check("covariate len: numeric, 1 pairs missing" in err, f"len summarised: {err}")
check("covariate grade: categorical (4 categories; line 3 has the first cell that is not a number), 0 pairs missing"
      in err, f"grade summarised: {err}")
with h5py.File(OUT) as f:
    g = f["cm"]
    check(list(g["pair_id"].asstr()[...]) == ["10", "11", "12", "13"], "pairs in numeric order")
    src = g["covariates/source"]
    check(h5py.check_string_dtype(src.dtype) is not None and src.shape == (4,), f"source is strings [P]: {src.dtype}")
    check(list(src.asstr()[...]) == ["gpt-4, turbo", "human", "", "human"], f"names, \"\" missing: {src[...]}")
    check(g["covariates/len"].dtype == np.float64, "a numeric column stays float64")
    ln = g["covariates/len"][...]
    check(np.isnan(ln[0]) and ln[1:].tolist() == [3.0, 5.0, 7.0], f"len values {ln}")
    check(list(g["covariates/grade"].asstr()[...]) == ["A", "1", "2", "1.0"], "grade: the texts as written")
os.remove(OUT)

# the user split at import: u1 has pairs 1 and 2; in run "b" pair 2 (line 7, after a quoted line break in a
# user-free column) disagrees with pair 1 (line 5)
split = write("split.csv", HEAD + ",note\n"
              "a,1,u1,1,0,1,x\n"
              "a,2,u1,1,0,1,\"two\nlines\"\n"
              "b,1,u1,1,0,0,x\n"
              "b,3,u9,1,0,1,x\n"
              "b,2,u1,1,0,1,\"two\nlines\"\n"
              "a,3,u9,1,0,0,x\n")
expect_input_error("split within a run", ["import", "cm-csv", split, "-o", OUT], [
    split + ': line 7: user "u1" is split inconsistently in run "b": pair "2" has in_train = 1 here but pair "1" has '
    'in_train = 0 on line 5; within a run all pairs of a user must share in_train'], out_file=OUT)
# the first disagreement in file order is named, whichever user
split2 = write("split2.csv", HEAD + "\n0,1,7,1,0,1\n0,2,8,1,0,0\n0,3,8,1,0,1\n0,4,7,1,0,0\n")
expect_input_error("first disagreement", ["import", "cm-csv", split2, "-o", OUT], [
    'line 4: user "8" is split inconsistently in run "0": pair "3" has in_train = 1 here but pair "2" has in_train = '
    '0 on line 3'], out_file=OUT)
# a user held out in one run and trained on in another is no split error
ok = write("ok.csv", HEAD + "\n0,1,u,1,0,1\n0,2,u,1,0,1\n1,1,u,1,0,0\n1,2,u,1,0,0\n")
code, _, err = run(["import", "cm-csv", ok, "-o", OUT])
check(code == 0, f"different flags in different runs are fine ({err.strip()})")
os.remove(OUT)

bad = {
    "category changes": (HEAD + ",source\n0,1,u,1,0,1,human\n1,1,u,1,0,0,model\n",
                         'line 3: covariate source of pair "1" is "model" here but "human" on line 2; a covariate has '
                         "one value per pair"),
    "missing then present": (HEAD + ",source\n0,1,u,1,0,1,\n1,1,u,1,0,0,human\n",
                             'line 3: covariate source of pair "1" is "human" here but "" on line 2'),
    # one number, two texts: fine in a numeric column, two names in a categorical one
    "one number, two names": (HEAD + ",grade\n0,1,u,1,0,1,1\n0,2,v,1,0,1,B\n1,1,u,1,0,0,1.0\n1,2,v,1,0,0,B\n",
                              'line 4: covariate grade of pair "1" is "1.0" here but "1" on line 2; grade holds '
                              "category names (line 3 has a cell that is not a number), so a pair's cells must be the "
                              "same text"),
    "number changes": (HEAD + ",len\n0,1,u,1,0,1,3\n1,1,u,1,0,0,4\n",
                       'line 3: covariate len of pair "1" is "4" here but "3" on line 2'),
}
for name, (text, needle) in bad.items():
    p = write(name.replace(" ", "_") + ".csv", text)
    expect_input_error(name, ["import", "cm-csv", p, "-o", OUT], [p + ": " + needle], out_file=OUT)
p = os.path.join(d, "latin1.csv")
with open(p, "wb") as f:
    f.write((HEAD + ",source\n0,1,u,1,0,1,caf").encode() + b"\xe9\n")
expect_input_error("not UTF-8", ["import", "cm-csv", p, "-o", OUT],
                   [p + ": line 2: covariate source: the value is not valid UTF-8 text"], out_file=OUT)
done()
